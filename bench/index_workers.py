"""``paperfeed index`` scaled out: papers per CPU-second, per worker and in total, as a user runs it.

Two modes, each running ``python -m paperfeed index`` as a user does (model loading included in the wall
clock and in the CPU seconds, which are counted per process with ``wait4``):

* ``--store postgresql`` (issue #39 item 7, the default): K separate ``paperfeed index`` processes at
  once against one throwaway PostgreSQL server, each with its own data folder as on K machines, sharing
  the backlog through claims (``FOR NO KEY UPDATE SKIP LOCKED``), for each K of ``--processes``. Each
  process runs ``--threads`` model threads (default 1: the figure is the model's per-core rate, which is
  what adding machines multiplies). The store's ledger says how many papers each process committed;
  the run checks that they add up to the papers (none committed twice) and that every paper has one
  vector. The PostgreSQL server's own CPU (the backends of the run) is printed beside it.
* ``--store sqlite``: one process with the whole thread budget against ``--workers N`` (one writer and N
  embedding processes) on a fresh SQLite folder, the earlier comparison.

The papers are ``--n`` real SciFact abstracts (most past the 256-token window). A first tiny run exports
the ONNX model into the cache, so no timed run pays for that.

    /work/bin/heavy .venv/bin/python -m bench.index_workers --n 400 --processes 1 2 3
    nice -n 5 .venv/bin/python -m bench.index_workers --store sqlite --n 300 --workers 1 2
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
from typing import Any

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


def _cpu_of(pid: int) -> float:
    """utime + stime + the reaped children's (cutime + cstime) of ``pid``, in seconds (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / os.sysconf("SC_CLK_TCK")


def _run_processes(
    papers: list[Paper], k: int, backend: str, threads: int, work: Path, server: Any
) -> dict[str, Any]:
    """K ``paperfeed index`` processes at once on one fresh PostgreSQL database; per-process CPU and
    committed papers (the store's ledger), the server's CPU, and the checks that nothing was done twice."""
    from sqlalchemy import create_engine, func, select
    from tests.support.postgres import create_database, drop_database

    from paperfeed.adapters.store.schema import embeddings
    from paperfeed.adapters.store.schema_claims import embedding_claims, embedding_workers

    name = create_database(server)
    url = server.url(name)
    try:
        store = open_store(url)
        try:
            store.apply_batch(Batch(papers=papers))
        finally:
            store.close()
        env = {
            **os.environ,
            "PAPERFEED_DATABASE_URL": url,
            "PAPERFEED_EMBEDDING_BACKEND": backend,
            "PAPERFEED_EMBEDDING_THREADS": str(threads),
            "PAPERFEED_VECTOR_INDEX": "local",  # the workers write vectors; nodes keep their own index
            "HF_HUB_OFFLINE": "1",
        }
        db_before = _cpu_of(server.pid)
        t0 = time.perf_counter()
        procs: list[tuple[subprocess.Popen[bytes], Path]] = []
        for i in range(k):
            data = work / f"pg-{k}-{i}-{time.time_ns()}"
            data.mkdir(parents=True)
            cmd = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "index", "--no-sentences"]
            cmd.append("--no-vector-index")  # a worker machine: its nodes keep (and follow) their own index
            log = (data / "index.log").open("wb")
            procs.append((subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT), data))
            log.close()
        cpu: dict[int, float] = {}
        walls: dict[int, float] = {}
        for proc, data in procs:
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            walls[proc.pid] = time.perf_counter() - t0
            cpu[proc.pid] = usage.ru_utime + usage.ru_stime
            if proc.returncode != 0:
                sys.exit(f"paperfeed index failed:\n{(data / 'index.log').read_text()[-2000:]}")
        wall = time.perf_counter() - t0
        db_cpu = _cpu_of(server.pid) - db_before
        engine = create_engine(url)
        try:
            with engine.connect() as conn:
                ledger = conn.execute(select(embedding_workers.c.holder, embedding_workers.c.papers)).all()
                stored = conn.execute(select(func.count()).select_from(embeddings)).scalar_one()
                left = conn.execute(select(func.count()).select_from(embedding_claims)).scalar_one()
        finally:
            engine.dispose()
    finally:
        drop_database(server, name)
    committed = {int(holder.split(":")[1]): int(n) for holder, n in ledger}
    if stored != len(papers) or sum(committed.values()) != len(papers) or left:
        sys.exit(f"{k} processes: {stored} vectors, {sum(committed.values())} committed, {left} claims left")
    workers = [
        {"pid": pid, "papers": committed.get(pid, 0), "cpu_s": cpu[pid], "wall_s": walls[pid]}
        for pid in sorted(cpu)
    ]
    total_cpu = sum(cpu.values())
    return {
        "wall_s": wall,
        "papers_per_s": len(papers) / wall,
        "cpu_s": total_cpu,
        "papers_per_cpu_s": len(papers) / total_cpu,
        "db_cpu_s": db_cpu,
        "workers": workers,
    }


def _postgres(args: argparse.Namespace, papers: list[Paper]) -> None:
    from tests.support.postgres import make_template, start_server, stop_server

    server = start_server()
    try:
        make_template(server)
        print(f"PostgreSQL {server.version}; {args.threads} model thread(s) per process", flush=True)
        results: dict[int, dict[str, Any]] = {}
        with tempfile.TemporaryDirectory(prefix="index-workers-") as tmp:
            _run(papers[:8], 1, args.backend, Path(tmp))  # the ONNX export, once, untimed
            # a process's fixed cost (Python, the store, the model's loading) and one paper's embedding
            fixed = _run_processes(papers[:1], 1, args.backend, args.threads, Path(tmp), server)["cpu_s"]
            print(f"one process's fixed cost (start, model load, 1 paper): {fixed:.1f} CPU-s", flush=True)
            for k in args.processes:
                load = os.getloadavg()[0]
                results[k] = r = _run_processes(papers, k, args.backend, args.threads, Path(tmp), server)
                marginal = len(papers) / max(r["cpu_s"] - k * fixed, 1e-9)
                print(
                    f"processes={k}: {r['papers_per_s']:.2f} papers/s wall ({r['wall_s']:.1f} s), "
                    f"{r['papers_per_cpu_s']:.2f} papers per CPU-s in total ({r['cpu_s']:.1f} CPU-s of the "
                    f"workers, model loads included; {marginal:.2f} without {k} fixed costs; PostgreSQL "
                    f"{r['db_cpu_s']:.1f} CPU-s); load {load:.1f} -> {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
                for w in r["workers"]:
                    rate = w["papers"] / w["cpu_s"] if w["cpu_s"] else 0.0
                    print(
                        f"  pid {w['pid']}: {w['papers']} papers, {w['cpu_s']:.1f} CPU-s, "
                        f"{rate:.2f} papers per CPU-s, done after {w['wall_s']:.1f} s",
                        flush=True,
                    )
    finally:
        stop_server(server)
    if 1 in results:
        base = results[1]
        for k, r in results.items():
            if k != 1:
                print(
                    f"ratio processes={k} / 1: wall papers/s {r['papers_per_s'] / base['papers_per_s']:.2f}, "
                    f"papers per CPU-s {r['papers_per_cpu_s'] / base['papers_per_cpu_s']:.2f}"
                )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--store", choices=["postgresql", "sqlite"], default="postgresql")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 3], help="postgresql: K")
    parser.add_argument("--threads", type=int, default=1, help="postgresql: model threads per process")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="sqlite: --workers N")
    parser.add_argument("--backend", default="onnx", choices=["torch", "onnx", "onnx-int8"])
    args = parser.parse_args()
    papers = _papers(args.n)
    print(f"CPU: {cpu_info().describe()}; {available_cores()} cores; nice {os.nice(0)}", flush=True)
    print(f"{len(papers)} SciFact abstracts, backend {args.backend}", flush=True)
    if args.store == "postgresql":
        _postgres(args, papers)
        return
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
