"""First start of ``paperfeed run`` on a fresh data folder, with the sources replayed on loopback.

Measures, from launching ``python -m paperfeed --data-dir D run --port P``:

1. the first 200 of ``GET /`` (the web child starts before the fill);
2. the end of the fill (the ``N papers in ...`` line run prints once every day of the window and every
   followed category has been answered);
3. all papers of the window searchable by meaning, two ways: the background indexer saying
   ``all N papers are embedded``, and the search API confirming it (``GET /api/papers/search`` without
   the coverage note in ``X-Search-Notes``; the site counts coverage at most every 30 s, so this one can
   lag the indexer by up to that).

The sources are the recorded responses of tests/fill (``/work/shared/fixtures``), served by the tests'
loopback replay server the same way ``tests/fill/test_fill_cli.py`` serves them: day ``i`` of the window
answers recording ``i mod 5`` (the fifth: ``[]``, a day without papers), and every arXiv API request
(the one id_list question about the Daily Papers' categories and every category listing) answers the
recorded feed the fill tests use. The real embedding model is used (backend ``auto`` unless
``--backend`` says otherwise). Ends with SIGINT and checks that ``paperfeed run`` exits.

``--install`` additionally times ``make run`` from a fresh ``git clone`` of this repository in a temp
folder (venv creation and install included) to its first 200 of ``GET /`` on port 8000.

    nice -n 5 .venv/bin/python bench/first_start.py [--days 30] [--arxiv-delay 0.5] [--install]
"""

from __future__ import annotations

import argparse
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.support: the loopback replay server and the recorded fixtures

from tests.fill.conftest import ARXIV_PATH, ATOM, RECORDED_DAYS, arxiv_body, serve_days  # noqa: E402
from tests.support.http_server import ReplayServer, Reply, replay_server  # noqa: E402

from bench.vector_cache import SHARED  # noqa: E402
from paperfeed.adapters.embed.cpu import cpu_info  # noqa: E402

FIXTURES = Path(os.environ.get("PAPERFEED_FIXTURES", SHARED / "fixtures"))
ARXIV_ANSWER = "q_testing_s0_m100_cfe7536492ca"  # tests/fill/test_fill.py's ID_LIST_ANSWER
FILL_END = re.compile(r"^[\d,]+ papers in ")  # run's own line after the fill (children's are prefixed)
QUERY = "language models for code generation"


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_sources(server: ReplayServer, days: int) -> None:
    """The window's days as tests/fill/test_fill_cli.py maps them, and the fill tests' arXiv feed."""
    today = datetime.now(UTC).date()
    window = [today - timedelta(days=i) for i in range(days)]
    serve_days(server, FIXTURES, {d: (*RECORDED_DAYS, None)[i % 5] for i, d in enumerate(window)})
    server.add(ARXIV_PATH, Reply(200, arxiv_body(FIXTURES, ARXIV_ANSWER), ATOM))


@dataclass
class Output:
    """The lines a process prints (stdout and stderr merged), each with its time since ``start``."""

    start: float
    lines: list[tuple[float, str]] = field(default_factory=list)
    fresh: queue.Queue[tuple[float, str]] = field(default_factory=queue.Queue)

    def read(self, proc: subprocess.Popen[str]) -> threading.Thread:
        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                item = (time.monotonic() - self.start, line.rstrip("\n"))
                self.lines.append(item)
                self.fresh.put(item)

        thread = threading.Thread(target=pump, daemon=True)
        thread.start()
        return thread

    def first(self, test: Callable[[str], bool]) -> tuple[float, str] | None:
        return next(((t, line) for t, line in list(self.lines) if test(line)), None)


def wait_for(what: str, probe: Callable[[], object], timeout: float, every: float = 0.1) -> object:
    """Call ``probe`` until it returns something truthy; None after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(every)
    print(f"TIMEOUT: {what} not reached within {timeout:g} s", flush=True)
    return None


def first_ok(base: str, start: float, proc: subprocess.Popen[str] | None) -> Callable[[], float | None]:
    def probe() -> float | None:
        if proc is not None and proc.poll() is not None:
            raise SystemExit(f"paperfeed run exited with {proc.returncode} before serving")
        try:
            if httpx.get(f"{base}/", timeout=5).status_code == 200:
                return time.monotonic() - start
        except httpx.HTTPError:
            pass
        return None

    return probe


def search_covered(
    base: str, start: float, proc: subprocess.Popen[str]
) -> Callable[[], tuple[float, int] | None]:
    """The time meaning search covers every paper: a search answered 200 without the coverage note."""

    def probe() -> tuple[float, int] | None:
        if proc.poll() is not None:
            raise SystemExit(f"paperfeed run exited with {proc.returncode} while indexing")
        try:
            response = httpx.get(f"{base}/api/papers/search", params={"q": QUERY}, timeout=30)
        except httpx.HTTPError:
            return None
        notes = response.headers.get("X-Search-Notes", "")
        if response.status_code == 200 and "Meaning search covers" not in notes:
            return time.monotonic() - start, len(response.json())
        return None

    return probe


def source_env(server: ReplayServer, args: argparse.Namespace) -> dict[str, str]:
    env = {
        **os.environ,
        "PAPERFEED_HF_API_URL": f"{server.base_url}/api",
        "PAPERFEED_ARXIV_API_URL": f"{server.base_url}{ARXIV_PATH}",
        "PAPERFEED_HF_DELAY": "0",
        "PAPERFEED_ARXIV_DELAY": str(args.arxiv_delay),
        "PAPERFEED_FILL_DAYS": str(args.days),
        "COLUMNS": "200",
    }
    if args.backend:
        env["PAPERFEED_EMBEDDING_BACKEND"] = args.backend
    return env


def stop(proc: subprocess.Popen[str], output: Output, reader: threading.Thread) -> None:
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        code = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        print("SIGINT: paperfeed run did NOT exit within 60 s; killing its process group", flush=True)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return
    reader.join(timeout=5)
    print(f"SIGINT: paperfeed run exited with code {code} after {time.monotonic() - sent:.1f} s", flush=True)


def first_start(server: ReplayServer, args: argparse.Namespace) -> None:
    data = Path(tempfile.mkdtemp(prefix="paperfeed-first-start-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**source_env(server, args), "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "run", "--port", str(port)]
    print(f"command: {' '.join(command)}", flush=True)
    start = time.monotonic()
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True
    )
    output = Output(start)
    reader = output.read(proc)
    try:
        served = wait_for("first 200 of GET /", first_ok(base, start, proc), args.timeout, every=0.05)
        print(f"first 200 of GET /:            {served:.2f} s" if served else "first 200: none", flush=True)

        def filled() -> tuple[float, str] | None:
            if proc.poll() is not None:
                raise SystemExit(f"paperfeed run exited with {proc.returncode} during the fill")
            return output.first(lambda line: FILL_END.match(line) is not None)

        end = wait_for("end of the fill", filled, args.timeout)
        papers = None
        if isinstance(end, tuple):
            papers = int(end[1].split()[0].replace(",", ""))
            print(
                f"end of the fill:               {end[0]:.2f} s ({papers:,} papers in the store)", flush=True
            )
        hf_requests = sum(1 for r in server.requests if r.path == "/api/daily_papers")
        arxiv_requests = sum(1 for r in server.requests if r.path == ARXIV_PATH)
        print(f"source requests: {hf_requests} Hugging Face days, {arxiv_requests} arXiv API", flush=True)

        # the search API is asked from the end of the fill on, every second, while the output is
        # watched for whoever embeds: the indexer, or the scheduler's daily job (one writer at a time)
        covered = wait_for(
            "search API: no coverage note", search_covered(base, start, proc), args.timeout, 1.0
        )
        if isinstance(covered, tuple):
            print(
                f"search API covers all papers:  {covered[0]:.2f} s ({covered[1]} hits for {QUERY!r}; "
                "the site refreshes its coverage count at most every 30 s)",
                flush=True,
            )
        daily = output.first(lambda line: "daily: index ok" in line)
        if daily:
            print(f"scheduler's daily job indexed: {daily[0]:.2f} s ({daily[1].split(' daily: ', 1)[1]})")
        said = wait_for(
            "indexer: all papers embedded",
            lambda: output.first(lambda line: "papers are embedded" in line),
            args.timeout if covered else 1,
            every=0.5,
        )
        if isinstance(said, tuple):
            print(
                f"indexer says all embedded:     {said[0]:.2f} s ({said[1].split(maxsplit=1)[1]})", flush=True
            )
    finally:
        stop(proc, output, reader)
        if args.log:
            Path(args.log).write_text("".join(f"{t:8.2f} {line}\n" for t, line in output.lines))
            print(f"run's output with times: {args.log}", flush=True)
        if args.keep:
            print(f"data folder kept: {data}", flush=True)
        else:
            shutil.rmtree(data, ignore_errors=True)


def install(server: ReplayServer, args: argparse.Namespace) -> None:
    """``make run`` from a fresh clone: venv, install and first start, to the first 200 of GET / (port 8000,
    the one ``make run`` serves on)."""
    base = "http://127.0.0.1:8000"
    try:
        with socket.create_connection(("127.0.0.1", 8000), timeout=1):
            raise SystemExit("--install: port 8000 is taken (make run serves there); free it first")
    except OSError:
        pass
    top = Path(tempfile.mkdtemp(prefix="paperfeed-install-"))
    branch = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--abbrev-ref", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    subprocess.run(["git", "clone", "-q", "--branch", branch, str(ROOT), str(top / "repo")], check=True)
    env = {**source_env(server, args), "PAPERFEED_DATA_DIR": str(top / "data")}
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    start = time.monotonic()
    proc = subprocess.Popen(
        ["make", "run"],
        cwd=top / "repo",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    output = Output(start)
    reader = output.read(proc)
    try:
        served = wait_for("make run: first 200 of GET /", first_ok(base, start, proc), 3600, every=0.5)
        if served:
            print(f"make run from a fresh clone, first 200 of GET /: {served:.1f} s", flush=True)
        installed = output.first(lambda line: "serving on" in line)
        if installed:
            print(f"make run: venv + install done, run started by {installed[0]:.1f} s", flush=True)
    finally:
        stop(proc, output, reader)
        shutil.rmtree(top, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--days", type=int, default=30, help="PAPERFEED_FILL_DAYS")
    parser.add_argument("--arxiv-delay", type=float, default=0.5, help="PAPERFEED_ARXIV_DELAY (seconds)")
    parser.add_argument("--backend", default=None, help="PAPERFEED_EMBEDDING_BACKEND (default: auto)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds each stage may take")
    parser.add_argument("--log", default=None, help="write run's output with times to this file")
    parser.add_argument("--keep", action="store_true", help="keep the data folder")
    parser.add_argument("--install", action="store_true", help="also time make run from a fresh clone")
    args = parser.parse_args()
    if args.backend == "fake":
        parser.error("the fake backend measures nothing: use the real embedding model")

    print(f"CPU: {cpu_info().describe()}; {os.cpu_count()} CPUs", flush=True)
    print(f"loadavg at start: {loadavg()}", flush=True)
    print(f"window: {args.days} days; arXiv delay {args.arxiv_delay:g} s; sources replayed on loopback")
    with replay_server() as server:
        serve_sources(server, args.days)
        first_start(server, args)
        if args.install:
            server.requests.clear()
            install(server, args)
    print(f"loadavg at end: {loadavg()}", flush=True)


if __name__ == "__main__":
    main()
