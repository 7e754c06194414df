"""Graph pages before and after a change of ``adapters/store/citations.py``, interleaved work by work in
one process, so both see the same load: a fair before → after on a shared machine (issue #16).

The old module is loaded from a file beside the package (``--old``, e.g. from ``git show``), the new one
is the installed code. On the cached graph of ``bench.graph_speed`` (``$PAPERFEED_BENCH_CACHE/graph-N``),
for 200 works (150 at random, the 50 most cited) each probe runs a warm pass then a timed one; every
answer of the new code is checked equal to the old one's. ``--own-pool``: the new code on its own engine
(without it, old and new share one pooled connection, and the old code's ROLLBACK discards the new
statement's preparation every time: the worst case).

    git show 5a70c74:src/paperfeed/adapters/store/citations.py > /tmp/citations_old.py
    PAPERFEED_BENCH_CACHE=/tmp/gs-bench .venv/bin/python -m bench.graph_pages_ab \\
        --old /tmp/citations_old.py --papers 1000000 --backend postgresql [--own-pool]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import text

from bench.speed import CACHE

PROBES = [
    ("references page, newest first", True, "date", False),
    ("cited-by page, newest first", False, "date", False),
    ("cited-by page, in store only", False, "date", True),
    ("cited-by page, most cited first", False, "citations", False),
]


def load_old(path: Path) -> Any:
    """The old module, as a sibling of the new one (its relative imports resolve to the package)."""
    name = "paperfeed.adapters.store.citations_before"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def server_ns(pid: int | None) -> int:
    """CPU nanoseconds of a PostgreSQL backend process (0 for SQLite, which runs in ours)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) if pid else 0


def backend_pid(engine: Any) -> int | None:
    if engine.dialect.name != "postgresql":
        return None
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--old", type=Path, required=True, help="the old citations.py")
    parser.add_argument("--papers", type=int, default=1_000_000)
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="postgresql")
    parser.add_argument("--own-pool", action="store_true", help="the new code on its own engine")
    args = parser.parse_args()

    from tests.support.postgres import start_server, stop_server

    from bench.backends import PG_SETTINGS
    from paperfeed.adapters.embed.cpu import cpu_info
    from paperfeed.adapters.store import citations as new
    from paperfeed.adapters.store.sql_store import make_engine
    from paperfeed.domain.paper_graph import CitationSort

    old = load_old(args.old)
    root = CACHE / f"graph-{args.papers}"
    server = None
    if args.backend == "postgresql":
        server = start_server(root / "pg", settings=PG_SETTINGS, reuse=True, timeout=300)
        url = server.url("graph")
    else:
        url = f"sqlite+pysqlite:///{root / 'graph.db'}"
    try:
        engine = make_engine(url)  # no migration: the cached graph is only read
        new_engine = make_engine(url) if args.own_pool else engine
        before, after = old.SqlCitationRecords(engine), new.SqlCitationRecords(new_engine)
        rnd = random.Random(16)
        with engine.connect() as conn:
            find = text("SELECT key FROM works WHERE key >= :k ORDER BY key LIMIT 1")
            keys = [
                str(
                    conn.execute(
                        find,
                        {"k": f"{rnd.randint(6, 25):02d}{rnd.randint(1, 12):02d}.{rnd.randint(0, 3999):05d}"},
                    ).scalar_one()
                )
                for _ in range(150)
            ]
            top = text("SELECT key FROM works ORDER BY cited_edges DESC LIMIT 50")
            keys += [str(k) for k in conn.execute(top).scalars()]
        pids = {"old": backend_pid(engine), "new": backend_pid(new_engine)}
        print(
            f"CPU: {cpu_info().describe()}; nice {os.getpriority(os.PRIO_PROCESS, 0)}; "
            f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.backend}, "
            f"{args.papers:,} works, {len(keys)} timed; {'own pool' if args.own_pool else 'shared pool'}"
        )
        for label, outgoing, sort, in_store_only in PROBES:
            walls: dict[str, list[float]] = {"old": [], "new": []}
            cpus: dict[str, list[float]] = {"old": [], "new": []}
            for timed in (False, True):
                for key in keys:
                    answers = []
                    for name, records in (("old", before), ("new", after)):
                        listed = records.references if outgoing else records.citations
                        s0, c0, t0 = server_ns(pids[name]), time.process_time_ns(), time.perf_counter_ns()
                        answers.append(
                            listed(
                                key,
                                sort=CitationSort(sort),
                                in_store_only=in_store_only,
                                offset=0,
                                limit=20,
                            )
                        )
                        if timed:
                            walls[name].append((time.perf_counter_ns() - t0) / 1e6)
                            cpus[name].append(
                                (time.process_time_ns() - c0 + server_ns(pids[name]) - s0) / 1e6
                            )
                    if answers[0] != answers[1]:
                        raise SystemExit(f"{label}, {key}: the new code answers differently")
            for name in ("old", "new"):
                w, c = np.asarray(walls[name]), np.asarray(cpus[name])
                print(
                    f"  {label:34s} {name}: wall p50 {np.percentile(w, 50):6.2f} "
                    f"p90 {np.percentile(w, 90):6.2f}   CPU p50 {np.percentile(c, 50):5.2f} "
                    f"p90 {np.percentile(c, 90):5.2f}",
                    flush=True,
                )
        print(f"load after: {os.getloadavg()[0]:.1f}")
    finally:
        if server is not None:
            stop_server(server, remove=False)


if __name__ == "__main__":
    main()
