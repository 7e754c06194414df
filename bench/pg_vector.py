"""pgvector recall@10 and latency at ~200k papers, unfiltered and filtered: bench/backends.py's recall rows
alone, plus filters of several selectivities.

Uses the caches ``bench/backends.py`` builds (``speed-<N>``: the float32 vectors, searched exactly for
the truth; ``pg-<N>``: the PostgreSQL cluster with the same vectors in pgvector). Queries are
bench/backends.py's: 100 perturbed stored vectors (``queries_like``, sample seed 7), k=10, through
``PgVectorIndex.search`` with its shipped settings (or ``--brute-force-rows`` / ``--overfetch``).

    nice .venv/bin/python -m bench.pg_vector [--size 200000]
"""

from __future__ import annotations

import argparse
import os
import random
import time
from datetime import date
from typing import Any

import numpy as np
from sqlalchemy import text

FILTERS: list[tuple[str, dict[str, Any]]] = [
    ("none", {}),
    (
        "astro-ph.CO since 2010 (bench.backends)",
        {"categories": ("astro-ph.CO",), "date_from": date(2010, 1, 1)},
    ),
    ("cs.LG", {"categories": ("cs.LG",)}),
    ("cs.CV", {"categories": ("cs.CV",)}),
    ("has code", {"has_code": True}),
]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--brute-force-rows", type=int, help="override PgVectorIndex's default")
    parser.add_argument("--overfetch", type=int, help="override PgVectorIndex's filtered_overfetch")
    parser.add_argument("--url", help="an already running server's database (default: start the cached one)")
    args = parser.parse_args()

    from tests.support.postgres import stop_server

    from bench.backends import DATABASE, pg_server
    from bench.speed import CACHE
    from bench.vector_data import queries_like
    from paperfeed.adapters.store import open_store
    from paperfeed.adapters.vector import open_vector_index
    from paperfeed.adapters.vector.pgvector_index import PgVectorIndex, stored_manifest
    from paperfeed.domain.search import SearchFilters

    print(f"load before: {os.getloadavg()[0]:.2f} (1-min average, {os.cpu_count()} cores)", flush=True)
    server = None if args.url else pg_server(args.size)
    try:
        store = open_store(args.url if server is None else server.url(DATABASE))
        manifest = stored_manifest(store.engine)
        assert manifest is not None, "no pgvector index: run python -m bench.backends --build-only first"
        options: dict[str, Any] = {}
        if args.brute_force_rows is not None:
            options["brute_force_rows"] = args.brute_force_rows
        if args.overfetch is not None:
            options["filtered_overfetch"] = args.overfetch
        index = PgVectorIndex(
            store.engine, model_id=manifest.model_id, dimension=manifest.dimension, **options
        )
        flat = open_vector_index(
            CACHE / f"speed-{args.size}" / "vectors",
            kind="exact",
            model_id=manifest.model_id,
            dimension=manifest.dimension,
        )
        with store.engine.connect() as conn:
            ids = [r[0] for r in conn.execute(text("SELECT id FROM papers ORDER BY id"))]
        sample = [v for pid in random.Random(7).sample(ids, 2000) if (v := flat.vector(pid)) is not None]
        probes = queries_like(np.stack(sample).astype(np.float32), args.queries)
        print(
            f"pgvector: brute_force_rows={index.brute_force_rows}, "
            f"filtered_overfetch={getattr(index, 'filtered_overfetch', 1)}, ef_search={index.ef_search}; "
            f"{len(probes)} queries, k=10"
        )
        print(f"{'filter':42s} {'rows':>8s} {'recall@10':>10s} {'p50 ms':>8s} {'p99 ms':>8s}")
        for label, spec in FILTERS:
            filters = SearchFilters(**spec) if spec else None
            params: dict[str, Any] = {}
            with store.engine.connect() as conn:
                where = index._filter_sql(filters or SearchFilters(), params)
                clause = f"WHERE {' AND '.join(where)}" if where else ""
                rows = conn.execute(text(f"SELECT count(*) FROM vector_index {clause}"), params).scalar_one()
            for v in probes[:5]:
                index.search(v, 10, filters)  # warm
            hits = total = 0
            lat = []
            for v in probes:
                truth = {h.paper_id for h in flat.search(v, 10, filters)}
                t0 = time.perf_counter()
                found = index.search(v, 10, filters)
                lat.append(time.perf_counter() - t0)
                hits += len(truth & {h.paper_id for h in found})
                total += len(truth)
            ms = np.asarray(lat) * 1e3
            print(
                f"{label:42s} {rows:8,d} {hits / max(total, 1):10.3f} {np.percentile(ms, 50):8.2f} "
                f"{np.percentile(ms, 99):8.2f}",
                flush=True,
            )
        store.close()
    finally:
        if server is not None:
            stop_server(server, remove=False)
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
