"""A machine's first start: how long until ``paperfeed run``'s first vector (issue #39, the after run's
first vector at 328.5 s against 71 s before).

As shipped: a fresh data folder with ``--papers`` of the 391 seed papers imported (``paperfeed import
--id-namespace seed``, not timed), then ``paperfeed run --offline`` (web and the niced background
indexer, backend ``auto``, the real model) with a model cache that holds the ONNX exports already built on
this machine (symlinked from the benches' cache: the exports are not what is measured) but **no
calibration record**, as on a machine whose first data folder this is. The script reads the SQLite file
(read-only) and the run's output, and prints the wall and CPU seconds (the whole process tree of
``paperfeed run``) from its start to the first vector stored, to every paper's vector, and to the
machine's calibration record written (the backends measured), then stops it.

``--variant NAME=PYTHONPATH`` (repeatable) runs another checkout's ``src`` with the same interpreter.

    /work/bin/heavy .venv/bin/python -m bench.first_vector --variant before=/path/to/main/src \\
        --variant after=src
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.processes import interrupt
from bench.sentence_roles import cpu_flags
from bench.time_to_capability import free_port, process_cpu
from bench.vector_cache import CACHE_ROOT, SHARED

ROOT = Path(__file__).resolve().parents[1]
SCRATCH = Path(os.environ.get("TMPDIR", "/tmp")) / "first-vector"


def vectors(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return int(conn.execute("SELECT count(*) FROM embeddings").fetchone()[0])
    except sqlite3.Error:
        return 0


def fresh_model_cache(folder: Path) -> Path:
    """A model cache with this machine's ONNX exports but no calibration record."""
    cache = folder / "models"
    cache.mkdir(parents=True)
    for entry in (CACHE_ROOT / "models").iterdir():
        if entry.is_dir():
            (cache / entry.name).symlink_to(entry, target_is_directory=True)
    return cache


def run(name: str, pythonpath: Path, papers: list[str], cap: float) -> dict[str, tuple[float, float]]:
    folder = SCRATCH / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    papers_file = folder / "papers.jsonl"
    papers_file.write_text("".join(line + "\n" for line in papers))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    env |= {
        "PYTHONPATH": str(pythonpath.resolve()),
        "PAPERFEED_SECRET_KEY": secrets.token_hex(32),
        "PAPERFEED_MODEL_CACHE": str(fresh_model_cache(folder)),
        "HF_HUB_OFFLINE": "1",
    }
    data = folder / "data"
    base = [sys.executable, "-m", "paperfeed", "--data-dir", str(data)]
    imported = [*base, "import", "--id-namespace", "seed", str(papers_file)]
    subprocess.run(imported, env=env, check=True, capture_output=True)
    marks: dict[str, tuple[float, float]] = {}
    started = time.monotonic()
    proc = subprocess.Popen(
        [*base, "run", "--offline", "--port", str(free_port())],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    log = (folder / "run.log").open("w")

    def mark(what: str) -> None:
        if what not in marks:
            marks[what] = (time.monotonic() - started, process_cpu(proc.pid))
            print(f"  [{name}] {what}: {marks[what][0]:,.1f} s, {marks[what][1]:,.1f} CPU-s", flush=True)

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(f"{time.monotonic() - started:8.1f} {line}")
            log.flush()
            if "checking for new ones" in line and vectors(data / "paperfeed.db") >= len(papers):
                mark("indexer idle")

    threading.Thread(target=read, daemon=True).start()
    try:
        while time.monotonic() - started < cap and proc.poll() is None:
            time.sleep(0.5)
            found = vectors(data / "paperfeed.db")
            if (Path(env["PAPERFEED_MODEL_CACHE"]) / "embedding-calibration.json").exists():
                mark("backends measured")  # the machine's record, written when the measuring ends
            if found:
                mark("first vector stored")
            if found >= len(papers):
                mark("every vector stored")
            if "indexer idle" in marks and "backends measured" in marks:
                break
    finally:
        interrupt(proc)
        log.close()
    return marks


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--variant", action="append", default=None, help="NAME=PYTHONPATH (repeatable)")
    parser.add_argument("--papers", type=int, default=64, help="seed papers imported first")
    parser.add_argument("--cap", type=float, default=900.0, help="seconds a run may take")
    args = parser.parse_args()
    variants = [v.split("=", 1) for v in (args.variant or [f"after={ROOT / 'src'}"])]
    seeds = [ln for ln in (SHARED / "seeds" / "seed_papers.jsonl").read_text().splitlines() if ln.strip()]
    papers = seeds[: args.papers]
    when = time.strftime("%Y-%m-%d %H:%M")
    print(f"CPU: {os.cpu_count()} cores, {cpu_flags()}; {when}; load {os.getloadavg()}")
    results = [(name, run(name, Path(path), papers, args.cap)) for name, path in variants]
    rows = ("first vector stored", "every vector stored", "backends measured", "indexer idle")
    print(
        f"\n{len(papers)} seed papers, a machine's first start: wall s (CPU s of paperfeed run's processes)"
    )
    print(f"{'':<24}" + "".join(f"{name:>24}" for name, _ in results))
    for row in rows:
        cells = [
            f"{m[row][0]:>10,.1f} ({m[row][1]:>7,.1f})" if row in m else f"{'not reached':>20}"
            for _, m in results
        ]
        print(f"{row:<24}" + "".join(f"{c:>24}" for c in cells))
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
