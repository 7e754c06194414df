"""``paperfeed index`` with one process against ``--workers N``: papers/s on real abstracts.

Each run is ``python -m paperfeed index`` on a fresh SQLite data folder holding the same ``--n`` SciFact
abstracts (real text, most past the 256-token window), as a user runs it: model loading included in the
wall clock, the CPU seconds of the command and its workers counted (``RUSAGE_CHILDREN``). One process
runs with the whole thread budget (``PAPERFEED_EMBEDDING_THREADS`` = the cores), N workers with a share
each. A first tiny run exports the ONNX model into the cache, so no timed run pays for that.

    nice -n 5 .venv/bin/python -m bench.index_workers [--n 300] [--workers 1 2] [--backend onnx]
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from paperfeed.adapters.embed.cpu import available_cores, cpu_info
from paperfeed.adapters.store import open_store
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper

SHARED = Path(os.environ.get("PAPERFEED_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def _papers(n: int) -> list[Paper]:
    from datetime import UTC, datetime

    out: list[Paper] = []
    with gzip.open(SHARED / "data" / "scifact_corpus.jsonl.gz", "rb") as f:
        for line in f:
            doc = orjson.loads(line)
            if not doc["abstract"]:
                continue
            out.append(
                Paper(
                    id=f"2501.{len(out):05d}",
                    title=doc["title"] or "untitled",
                    abstract=doc["abstract"],
                    categories=("q-bio.QM",),
                    published=datetime(2025, 1, 1, tzinfo=UTC),
                )
            )
            if len(out) == n:
                break
    return out


def _run(papers: list[Paper], workers: int, backend: str, work: Path) -> dict[str, float | str]:
    data = work / f"data-{workers}-{time.time_ns()}"
    data.mkdir(parents=True)
    store = open_store(f"sqlite+pysqlite:///{data / 'paperfeed.db'}")
    try:
        store.apply_batch(Batch(papers=papers))
    finally:
        store.close()
    env = {
        **os.environ,
        "PAPERFEED_EMBEDDING_BACKEND": backend,
        "PAPERFEED_EMBEDDING_THREADS": str(available_cores()),
        "HF_HUB_OFFLINE": "1",
    }
    cmd = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "index", "--workers", str(workers)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    shutil.rmtree(data, ignore_errors=True)
    out = " ".join(done.stdout.split())
    reported = re.search(r"in ([\d,.]+) s \(([\d,.]+) papers/s\)", out)
    return {
        "wall_s": wall,
        "papers_per_s": len(papers) / wall,
        "papers_per_cpu_s": len(papers) / cpu if cpu else 0.0,
        "reported": f"{reported.group(2)} papers/s in {reported.group(1)} s" if reported else "?",
        "workers": "; ".join(re.findall(r"worker \d+ \(pid \d+\): .*? loaded in [\d.,]+ s\)", out)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--backend", default="onnx", choices=["torch", "onnx", "onnx-int8"])
    args = parser.parse_args()
    papers = _papers(args.n)
    print(f"CPU: {cpu_info().describe()}; {available_cores()} cores; nice {os.nice(0)}", flush=True)
    print(f"{len(papers)} SciFact abstracts, backend {args.backend}", flush=True)
    with tempfile.TemporaryDirectory(prefix="index-workers-") as tmp:
        _run(papers[:8], 1, args.backend, Path(tmp))  # the ONNX export, once, untimed
        results = {}
        for workers in args.workers:
            load = os.getloadavg()[0]
            results[workers] = r = _run(papers, workers, args.backend, Path(tmp))
            print(
                f"workers={workers}: {r['papers_per_s']:.2f} papers/s wall ({r['wall_s']:.1f} s, model load "
                f"included; the command reported {r['reported']}), {r['papers_per_cpu_s']:.2f} papers per "
                f"CPU-s; load {load:.1f} -> {os.getloadavg()[0]:.1f}",
                flush=True,
            )
            if r["workers"]:
                print(f"  {r['workers']}", flush=True)
    if 1 in results:
        base = float(results[1]["papers_per_s"])
        for workers, r in results.items():
            if workers != 1:
                print(f"ratio workers={workers} / workers=1: {float(r['papers_per_s']) / base:.2f}")


if __name__ == "__main__":
    main()
