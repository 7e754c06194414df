"""PostgreSQL full-text search alone at ~200k papers: latency and how much a ranking change moves results.

Uses the PostgreSQL cluster ``bench/backends.py`` builds and caches (``pg-<N>``; run that first) and the
same queries as its ``keyword`` rows (real titles' first 3-6 words, seed 5, plus bench/speed.py's common
phrases), k=10 and k=100 (the hybrid service's candidate pool), unfiltered and with the selective filter
(astro-ph.CO since 2010). ``--save FILE`` writes every query's top-k ids; ``--compare FILE`` reports the
overlap@k of this run's results with a saved run (e.g. before and after a change to the SQL).

``--quality``: SciFact (BEIR) nDCG@10, train and test, as bench/backends.py ``--quality`` loads it (a
throwaway server, then ANALYZE so that the lexeme frequencies exist): every match ranked (as before
candidates), candidates only, candidates with the ``RANKED_ROWS`` cap (as shipped), and the cap alone.

    nice .venv/bin/python -m bench.pg_keyword [--size 200000] [--save before.json] [--compare before.json]
    nice .venv/bin/python -m bench.pg_keyword --quality
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from datetime import date
from pathlib import Path

import numpy as np
from sqlalchemy import text

from bench.speed import COMMON


def quality() -> None:
    from bench.backends import scifact_postgres
    from bench.ir_metrics import evaluate, load_qrels
    from bench.keyword_quality import DATA, run_queries
    from paperfeed.adapters.keyword import postgres_fts

    splits = {
        name: load_qrels(DATA / "qrels_scifact.jsonl.gz", name, "scifact:") for name in ("train", "test")
    }
    with scifact_postgres() as store:
        with store.engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("ANALYZE papers"))
        shipped = postgres_fts.COMMON_SHARE, postgres_fts.RANKED_ROWS
        configs = [
            ("every match ranked (as before)", 2.0, 10**9),
            (f"candidates, COMMON_SHARE={shipped[0]}", shipped[0], 10**9),
            (f"candidates, at most {shipped[1]:,} ranked (shipped)", *shipped),
            (f"every match, at most {shipped[1]:,} ranked", 2.0, shipped[1]),
        ]
        try:
            for label, share, ranked in configs:
                postgres_fts.COMMON_SHARE, postgres_fts.RANKED_ROWS = share, ranked
                index = postgres_fts.PostgresKeywordIndex(store.engine)
                scores = []
                for name, (queries, relevant) in splits.items():
                    run, ms = run_queries(index.search, queries)
                    scores.append(f"{name} nDCG@10 {evaluate(run, relevant)['ndcg@10']:.4f} ({ms:.1f} ms/q)")
                print(f"{label:44s} " + ", ".join(scores), flush=True)
        finally:
            postgres_fts.COMMON_SHARE, postgres_fts.RANKED_ROWS = shipped


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--rounds", type=int, default=3, help="timed passes over the queries (after a warm one)"
    )
    parser.add_argument("--save", type=Path)
    parser.add_argument("--compare", type=Path)
    parser.add_argument("--quality", action="store_true", help="SciFact nDCG@10 with and without candidates")
    parser.add_argument("--url", help="an already running server's database (default: start the cached one)")
    args = parser.parse_args()
    if args.quality:
        quality()
        return

    from tests.support.postgres import stop_server

    from bench.backends import DATABASE, pg_server
    from paperfeed.adapters.keyword.postgres_fts import PostgresKeywordIndex
    from paperfeed.adapters.store import open_store
    from paperfeed.domain.query import parse_query, with_filters
    from paperfeed.domain.search import SearchFilters

    print(f"load before: {os.getloadavg()[0]:.2f} (1-min average, {os.cpu_count()} cores)", flush=True)
    server = None if args.url else pg_server(args.size)
    try:
        store = open_store(args.url if server is None else server.url(DATABASE))
        index = PostgresKeywordIndex(store.engine)
        rng = random.Random(5)
        with store.engine.connect() as conn:
            titles = [
                r[0]
                for r in conn.execute(text("SELECT title FROM papers WHERE id NOT LIKE 'syn:%' ORDER BY id"))
            ]
        queries = [
            " ".join(t.split()[: rng.randint(3, 6)]) for t in rng.sample(titles, args.queries)
        ] + COMMON
        selective = SearchFilters(categories=("astro-ph.CO",), date_from=date(2010, 1, 1))
        results: dict[str, list[list[str]]] = {}
        with store.engine.connect() as conn:
            version = conn.execute(text("SHOW server_version")).scalar_one()
        print(f"{len(queries)} queries, {args.rounds} timed rounds; PostgreSQL {version}")
        print(f"{'':18s} {'p50 ms':>8s} {'p99 ms':>8s} {'mean ms':>8s}")
        for k in (10, 100):
            for label, filters in (("", None), (" +filter", selective)):
                parsed = [with_filters(parse_query(q), filters) for q in queries]
                found = [[h.paper_id for h in index.search(p, k)] for p in parsed]  # warm
                lat: list[float] = []
                for _ in range(args.rounds):
                    for p in parsed:
                        t0 = time.perf_counter()
                        index.search(p, k)
                        lat.append(time.perf_counter() - t0)
                name = f"k={k}{label}"
                results[name] = found
                ms = np.asarray(lat) * 1e3
                print(
                    f"{name:18s} {np.percentile(ms, 50):8.2f} {np.percentile(ms, 99):8.2f} {ms.mean():8.2f}",
                    flush=True,
                )
        store.close()
    finally:
        if server is not None:
            stop_server(server, remove=False)
    if args.save:
        args.save.write_text(json.dumps(results))
    if args.compare:
        before = json.loads(args.compare.read_text())
        for name, now in results.items():
            overlaps = [
                len(set(a) & set(b)) / len(b) if b else float(not a)
                for a, b in zip(now, before[name], strict=True)
            ]
            same = sum(a == b for a, b in zip(now, before[name], strict=True))
            print(
                f"{name:18s} overlap@k with {args.compare.name}: {np.mean(overlaps):.3f}; identical: {same}"
            )
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
