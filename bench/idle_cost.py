"""What an idle instance costs (issue #39 item 6): each child's memory, and the daily job with nothing to do.

As shipped: ``paperfeed run --offline`` (web, scheduler and indexer, supervised) on a fresh data folder,
with the real embedding model (``PAPERFEED_EMBEDDING_BACKEND``, default ``auto``):

1. empty: the resident memory (RSS, and that of the processes each child started) of every child once
   the instance settled;
2. after an import: ``paperfeed import`` of the 391 seed papers (``../shared/seeds/seed_papers.jsonl``);
   the indexer embeds them (and their sentences), then goes idle; RSS again once its embedding process
   was released (``PAPERFEED_EMBEDDER_IDLE_SECONDS``, shortened here to ``--release`` seconds);
3. the daily job with nothing to do (``paperfeed jobs run daily``, the steps that need no network:
   index, topics, digests) on the empty folder and on the embedded one: its CPU seconds.

    .venv/bin/python -m bench.idle_cost [--release 20] [--backend auto] [--empty-only]

``--empty-only`` stops after 1 and the daily job on the empty folder: no model is loaded (a few CPU
seconds in all), so it can run beside other work.
"""

from __future__ import annotations

import argparse
import os
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from bench.vector_cache import SHARED
from bench.web_speed import free_port
from paperfeed.adapters.embed.cpu import available_cores, cpu_info

SEEDS = SHARED / "seeds" / "seed_papers.jsonl"


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[-1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    return found


def _name(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    words = [a.decode() for a in argv if a]
    for name, word in (("web", "serve"), ("scheduler", "scheduler"), ("indexer", "--follow")):
        if word in words:
            return name
    return " ".join(words[-2:])


def memory(supervisor: int) -> dict[str, tuple[float, float]]:
    """Each child of ``paperfeed run``: its own RSS and that of the processes it started (MB)."""
    out = {}
    for child in _children(supervisor):
        below = sum(_rss_mb(g) for g in _children(child))
        out[_name(child)] = (_rss_mb(child), below)
    return out


def daily_cpu(data: Path, env: dict[str, str]) -> tuple[float, str]:
    """CPU seconds of ``paperfeed jobs run daily`` (children included) and its step lines."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    command = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "jobs", "run", "daily"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, " ".join(line.strip() for line in done.stdout.splitlines() if line.startswith("  index"))


def wait_for(proc: subprocess.Popen[str], text: str, lines: list[str], timeout: float) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"paperfeed run ended: {lines[-20:]}")
        lines.append(line.rstrip())
        if text in line:
            return
    raise SystemExit(f"{text!r} never came within {timeout:.0f} s: {lines[-20:]}")


class _Done(Exception):
    """--empty-only: the empty instance is measured, stop it."""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--release", type=float, default=20.0, help="PAPERFEED_EMBEDDER_IDLE_SECONDS here")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds for an instance to settle")
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / "idle-cost"
    parser.add_argument("--scratch", type=Path, default=scratch)
    parser.add_argument("--empty-only", action="store_true", help="the empty instance only: no import")
    args = parser.parse_args()
    shutil.rmtree(args.scratch, ignore_errors=True)
    data = args.scratch / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    env |= {
        "PAPERFEED_SECRET_KEY": secrets.token_urlsafe(32),
        "PAPERFEED_EMBEDDING_BACKEND": args.backend,
        "PAPERFEED_EMBEDDER_IDLE_SECONDS": str(args.release),
        "PAPERFEED_JOBS_DAILY_STEPS": "index,topics,digests",
        "HF_HUB_OFFLINE": "1",
    }
    empty_cpu, empty_said = daily_cpu(data, env)
    command = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "run", "--offline"]
    command += ["--port", str(free_port()), "--scheduler"]
    run = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    try:
        wait_for(run, "checking for new ones", lines, 600)
        time.sleep(args.settle)
        empty = memory(run.pid)
        idle: dict[str, tuple[float, float]] = {}
        indexed = 0.0
        if args.empty_only:
            raise _Done
        started = time.monotonic()
        importing = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "import", str(SEEDS)]
        subprocess.run([*importing, "--id-namespace", "seed"], env=env, capture_output=True, check=True)
        wait_for(run, "embedded", lines, 3600)
        wait_for(run, "checking for new ones", lines, 7200)
        indexed = time.monotonic() - started
        time.sleep(args.release + args.settle)
        idle = memory(run.pid)
    except _Done:
        pass
    finally:
        run.send_signal(signal.SIGINT)
        try:
            run.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            run.kill()
    idle_cpu, idle_said = (0.0, "") if args.empty_only else daily_cpu(data, env)
    print(
        f"\nidle cost, backend {args.backend}, CPU {cpu_info().describe()}, {available_cores()} cores; "
        f"embedding released {args.release:g} s after its last batch\n"
    )
    print("child       empty: RSS MB (+ its children)   391 papers imported, idle: RSS MB (+ children)")
    for name in sorted(set(empty) | set(idle)):
        e, ec = empty.get(name, (0.0, 0.0))
        i, ic = idle.get(name, (0.0, 0.0))
        after = "       -" if args.empty_only else f"{i:8.0f} (+{ic:.0f})"
        print(f"{name:<11} {e:8.0f} (+{ec:.0f})                         {after}")
    print(f"\ndaily job with nothing to do, empty store:   {empty_cpu:6.2f} CPU-s   {empty_said}")
    if not args.empty_only:
        print(f"the 391 papers embedded (sentences included) {indexed:,.0f} s after the import")
        print(f"daily job with nothing to do, all embedded:  {idle_cpu:6.2f} CPU-s   {idle_said}")


if __name__ == "__main__":
    main()
