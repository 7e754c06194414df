"""The paper graph at scale (issue #16): references / cited-by pages and related-work counts on a
synthetic graph of N works (default 1,000,000) with ~30 references each, on SQLite and PostgreSQL.

The graph: works in date order over 20 years; 70 % are arXiv papers (in the store: a ``papers`` row),
30 % DOI-only works outside it; 3 % have no date and 2 % only a year. Each work cites ~lognormal(27,
0.55) older works (median 27, mean ~31, at most 400), as recorded reference lists run. A reference is
either copied from an earlier edge (probability 0.6: preferential attachment, which gives cited-by its
long tail) or an older work drawn with a bias to recent ones (age ~ u**3 of the timeline).

It is loaded straight into the tables (SQLite ``executemany`` in big transactions, PostgreSQL ``COPY``),
the cited-by index built after the load, then ANALYZE; the databases are kept under
``$PAPERFEED_BENCH_CACHE/graph-<N>`` and reused (``--rebuild`` to start over).

Timed (after a warm pass, by default one call per timed work): for 200 works (150 drawn at random among
those with references, 50 of the 1,000 most cited) a references page and a cited-by page (20 rows,
newest first, with the total), the cited-by page most-cited-first and in-store-only, ``counts`` and
``related_counts(limit=20)``; wall and CPU time of each call (CPU: this process plus, for PostgreSQL,
its server process, from ``/proc/<pid>/schedstat``), as p50 / p90.

    nice -n 10 .venv/bin/python -m bench.graph_speed --papers 100000 [--backend sqlite|postgresql|both]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import time
from collections.abc import Callable, Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bench.speed import CACHE

START = date(2006, 1, 1)
SPAN_DAYS = 20 * 365
STAMP = "2026-11-20 06:00:00.000000"
SEED = 16


class Graph:
    """The synthetic works and edges (numpy arrays; edges sorted by the keys' text order)."""

    def __init__(self, n: int, seed: int = SEED) -> None:
        rng = np.random.default_rng(seed)
        self.n = n
        days = np.arange(n, dtype=np.int64) * SPAN_DAYS // n
        self.in_store = rng.random(n) < 0.7
        kind = rng.random(n)
        self.undated = kind < 0.03
        self.year_only = (kind >= 0.03) & (kind < 0.05)
        self.dates = [START + timedelta(days=int(d)) for d in days]
        self.keys = self._keys()
        self.sort_day = np.array(
            [
                0 if u else (d.year * 10000 if y else d.year * 10000 + d.month * 100 + d.day)
                for d, u, y in zip(self.dates, self.undated, self.year_only, strict=True)
            ],
            dtype=np.int64,
        )
        counts = np.minimum(np.rint(rng.lognormal(np.log(27), 0.55, n)).astype(np.int64), 400)
        counts = np.minimum(counts, np.arange(n))
        citing_parts: list[np.ndarray] = []
        cited_parts: list[np.ndarray] = []
        pool = np.empty(int(counts.sum()), dtype=np.int64)
        filled = 0
        chunk = max(1000, n // 200)
        for start in range(0, n, chunk):
            idx = np.arange(start, min(n, start + chunk))
            citing = np.repeat(idx, counts[idx])
            m = len(citing)
            if m == 0:
                continue
            recent = citing - 1 - np.floor((citing - 1) * rng.random(m) ** 3).astype(np.int64)
            if filled:
                copy = rng.random(m) < 0.6
                recent[copy] = pool[rng.integers(0, filled, int(copy.sum()))]
            pair = np.unique(citing * n + recent)
            citing, cited = pair // n, pair % n
            pool[filled : filled + len(cited)] = cited
            filled += len(cited)
            citing_parts.append(citing)
            cited_parts.append(cited)
        citing = np.concatenate(citing_parts)
        cited = np.concatenate(cited_parts)
        rank = np.empty(n, dtype=np.int64)
        rank[np.argsort(np.array(self.keys))] = np.arange(n)
        order = np.lexsort((rank[cited], rank[citing]))  # primary-key order: appends, not scattered
        self.citing, self.cited = citing[order], cited[order]
        self.cited_edges = np.bincount(self.cited, minlength=n)
        # a source's reported cited-by count, a little above the edges for a third of the works
        bump = rng.random(n) < 0.33
        self.reported = np.where(bump, (self.cited_edges * 1.2).astype(np.int64) + 1, -1)

    def _keys(self) -> list[str]:
        keys: list[str] = []
        seq: dict[tuple[int, int], int] = {}
        for i, d in enumerate(self.dates):
            if self.in_store[i]:
                ym = (d.year % 100, d.month)
                seq[ym] = seq.get(ym, 0) + 1
                keys.append(f"{ym[0]:02d}{ym[1]:02d}.{seq[ym]:05d}")
            else:
                keys.append(f"doi:10.{1000 + i % 9000}/synthetic.{i}")
        return keys

    def work_rows(self) -> Iterator[tuple[Any, ...]]:
        for i, key in enumerate(self.keys):
            d = self.dates[i]
            published = None if self.undated[i] or self.year_only[i] else d.isoformat()
            year = None if self.undated[i] else d.year
            reported = int(self.reported[i])
            yield (
                key,
                f"Synthetic work {i}",
                year,
                published,
                key if self.in_store[i] else None,
                None if self.in_store[i] else key[4:],
                reported if reported >= 0 else None,
                int(self.cited_edges[i]),
                int(self.sort_day[i]),
                STAMP,
            )

    def paper_rows(self) -> Iterator[tuple[Any, ...]]:
        for i in np.flatnonzero(self.in_store):
            d = self.dates[i]
            yield (self.keys[i], f"Synthetic work {i}", f"{d.isoformat()} 00:00:00.000000")

    def edge_rows(self, start: int, stop: int) -> Iterator[tuple[Any, ...]]:
        keys, days = self.keys, self.sort_day
        for a, b in zip(self.citing[start:stop].tolist(), self.cited[start:stop].tolist(), strict=True):
            yield (keys[a], keys[b], int(days[a]))


WORK_COLUMNS = "key, title, year, published, arxiv_id, doi, citation_count, cited_edges, sort_day, updated_at"
EDGE_COLUMNS = "citing, cited, citing_day, is_influential, contexts, intents, sources, first_seen"
INDEX_SQL = "CREATE INDEX ix_citations_cited_day ON citations (cited, citing_day, citing)"


def load_sqlite(graph: Graph, path: Path) -> dict[str, float]:
    from paperfeed.adapters.store import open_store

    store = open_store(f"sqlite+pysqlite:///{path}")
    raw = store.engine.raw_connection()
    try:
        cur: Any = raw.cursor()  # sqlite3 takes an iterator of rows
        cur.execute("PRAGMA synchronous=OFF")
        cur.execute("DROP INDEX ix_citations_cited_day")
        t0 = time.perf_counter()
        cur.execute("BEGIN")
        cur.executemany(
            "INSERT INTO papers (id, title, abstract, authors, categories, ai_keywords, sources, "
            "content_hash, created_at, modified_at, published) "
            f"VALUES (?, ?, '', '[]', '[]', '[]', '{{}}', '', '{STAMP}', '{STAMP}', ?)",
            graph.paper_rows(),
        )
        cur.executemany(f"INSERT INTO works ({WORK_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)", graph.work_rows())
        raw.commit()
        step = 2_000_000
        for start in range(0, len(graph.citing), step):
            cur.execute("BEGIN")
            cur.executemany(
                f"INSERT INTO citations ({EDGE_COLUMNS}) "
                f"VALUES (?, ?, ?, NULL, '[]', '[]', '[\"s2\"]', '{STAMP}')",
                graph.edge_rows(start, start + step),
            )
            raw.commit()
        loaded = time.perf_counter() - t0
        t1 = time.perf_counter()
        cur.execute(INDEX_SQL)
        cur.execute("ANALYZE")
        raw.commit()
        indexed = time.perf_counter() - t1
        cur.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        raw.close()
        store.close()
    return {"load_s": loaded, "index_s": indexed}


def _copy(conn: Any, sql: str, rows: Iterator[tuple[Any, ...]]) -> None:
    with conn.cursor() as cur, cur.copy(sql) as copy:
        for row in rows:
            copy.write_row(row)


def load_postgres(graph: Graph, url: str) -> dict[str, float]:
    import psycopg

    from paperfeed.adapters.store import open_store

    open_store(url).close()  # migrate
    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    t0 = time.perf_counter()
    with psycopg.connect(dsn) as conn:
        conn.execute("DROP INDEX ix_citations_cited_day")
        conn.execute("SET synchronous_commit = off")
        _copy(
            conn,
            "COPY papers (id, title, published, abstract, authors, categories, ai_keywords, sources, "
            "content_hash, created_at, modified_at) FROM STDIN",
            ((k, t, p, "", "[]", "[]", "[]", "{}", "", STAMP, STAMP) for k, t, p in graph.paper_rows()),
        )
        _copy(conn, f"COPY works ({WORK_COLUMNS}) FROM STDIN", graph.work_rows())
        conn.commit()
        step = 2_000_000
        for start in range(0, len(graph.citing), step):
            _copy(
                conn,
                f"COPY citations ({EDGE_COLUMNS}) FROM STDIN",
                (
                    (a, b, d, None, "[]", "[]", '["s2"]', STAMP)
                    for a, b, d in graph.edge_rows(start, start + step)
                ),
            )
            conn.commit()
        loaded = time.perf_counter() - t0
        t1 = time.perf_counter()
        conn.execute(INDEX_SQL)
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE")
        indexed = time.perf_counter() - t1
    return {"load_s": loaded, "index_s": indexed}


def sample_keys(graph: Graph, count: int) -> list[str]:
    rng = random.Random(SEED)
    with_refs = np.flatnonzero(np.bincount(graph.citing, minlength=graph.n) > 0).tolist()
    top = np.argsort(-graph.cited_edges)[:1000].tolist()
    picked = rng.sample(with_refs, count - count // 4) + rng.sample(top, count // 4)
    return [graph.keys[i] for i in picked]


def backend_cpu_ns(pid: int | None) -> int:
    """Nanoseconds of CPU a PostgreSQL backend process has run (0 for SQLite, which runs in ours):
    ``/proc/<pid>/schedstat``, exact to the nanosecond where ``/proc/<pid>/stat`` counts 10 ms ticks."""
    if pid is None:
        return 0
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def timed(
    keys: list[str], call: Callable[[str], Any], pid: int | None, warm: int
) -> tuple[np.ndarray, np.ndarray]:
    """Wall and CPU milliseconds of each call (CPU: this process and, for PostgreSQL, its backend): on a
    shared machine the wall time includes waiting for a core and the CPU time does not."""
    for key in keys[:warm]:
        call(key)  # warm: the caches, and psycopg's prepared statements
    wall, cpu = [], []
    for key in keys:
        server0, cpu0, t0 = backend_cpu_ns(pid), time.process_time_ns(), time.perf_counter_ns()
        call(key)
        wall.append(time.perf_counter_ns() - t0)
        cpu.append(time.process_time_ns() - cpu0 + backend_cpu_ns(pid) - server0)
    return np.asarray(wall) / 1e6, np.asarray(cpu) / 1e6


Result = tuple[str, np.ndarray, np.ndarray, np.ndarray]


def measure(records: Any, keys: list[str], top: list[str], warm: int) -> list[Result]:
    from paperfeed.domain.paper_graph import CitationSort

    as_of = date(2026, 1, 1)
    probes: list[tuple[str, Callable[[str], Any]]] = [
        (
            "references page, newest first",
            lambda k: records.references(k, sort=CitationSort.DATE, in_store_only=False, offset=0, limit=20),
        ),
        (
            "cited-by page, newest first",
            lambda k: records.citations(k, sort=CitationSort.DATE, in_store_only=False, offset=0, limit=20),
        ),
        (
            "cited-by page, in store only",
            lambda k: records.citations(k, sort=CitationSort.DATE, in_store_only=True, offset=0, limit=20),
        ),
        (
            "cited-by page, most cited first",
            lambda k: records.citations(
                k, sort=CitationSort.CITATIONS, in_store_only=False, offset=0, limit=20
            ),
        ),
        ("counts (one paper)", lambda k: records.counts([k], as_of=as_of)),
        ("related_counts(limit=20)", lambda k: records.related_counts(k, limit=20)),
    ]
    pid = None
    if records.engine.dialect.name == "postgresql":
        from sqlalchemy import text

        with records.engine.connect() as conn:  # the pool hands this one connection back every time
            pid = int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())
    results = []
    top_set = set(top)
    for label, call in probes:
        ms, cpu = timed(keys, call, pid, warm)
        heavy = np.asarray([m for k, m in zip(keys, ms, strict=True) if k in top_set])
        results.append((label, ms, cpu, heavy))
    if pid is not None:
        with records.engine.connect() as conn:
            assert int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one()) == pid
    return results


def report(backend: str, results: list[Result]) -> None:
    print(
        f"\n{backend}:{'':33s} {'wall p50':>8s} {'p90':>7s} {'max':>7s} {'CPU p50':>8s} {'p90':>6s}"
        "  top-cited wall p50/p90"
    )
    for label, ms, cpu, heavy in results:
        print(
            f"  {label:40s} {np.percentile(ms, 50):8.2f} {np.percentile(ms, 90):7.2f} {ms.max():7.1f} "
            f"{np.percentile(cpu, 50):8.2f} {np.percentile(cpu, 90):6.2f}"
            f"  {np.percentile(heavy, 50):7.2f} / {np.percentile(heavy, 90):.2f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--papers", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--rebuild", action="store_true", help="load the graph again even if cached")
    parser.add_argument(
        "--warm",
        type=int,
        default=None,
        help="calls of each probe before the timed pass (default: every timed work once, so the pass "
        "reads pages the cache holds; 20 is how session 6 measured)",
    )
    args = parser.parse_args()

    from tests.support.postgres import start_server, stop_server

    from bench.backends import PG_SETTINGS
    from paperfeed.adapters.embed.cpu import cpu_info
    from paperfeed.adapters.store import open_store
    from paperfeed.adapters.store.citations import (
        RELATED_CITERS,
        RELATED_CITERS_PER_REFERENCE,
        RELATED_PRIOR_CITERS_PER_REFERENCE,
        RELATED_REFERENCES,
        SqlCitationRecords,
    )

    print(f"CPU: {cpu_info().describe()}; nice {os.getpriority(os.PRIO_PROCESS, 0)}")
    print(f"load before: {os.getloadavg()[0]:.2f} (1-min average, {os.cpu_count()} cores)")
    root = CACHE / f"graph-{args.papers}"
    if args.rebuild:
        shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    graph = Graph(args.papers)
    in_degree = graph.cited_edges
    citing_works = max(1, int(np.count_nonzero(np.bincount(graph.citing))))
    print(
        f"graph: {graph.n:,} works ({int(graph.in_store.sum()):,} in the store), {len(graph.citing):,} edges "
        f"(references per citing work: mean {len(graph.citing) / citing_works:.1f}); "
        f"cited-by: median {int(np.median(in_degree))}, p99 {int(np.percentile(in_degree, 99))}, "
        f"max {int(in_degree.max()):,}; generated in {time.perf_counter() - t0:.0f} s"
    )
    print(
        f"related caps: {RELATED_REFERENCES} references, {RELATED_CITERS_PER_REFERENCE} newest citers per "
        f"reference (coupling), {RELATED_PRIOR_CITERS_PER_REFERENCE} (prior), {RELATED_CITERS} newest "
        "citers of the paper (co-citation)"
    )
    keys = sample_keys(graph, args.queries)
    warm = len(keys) if args.warm is None else args.warm
    print(f"timed: {len(keys)} works per probe after {warm} warm-up calls")
    top = [graph.keys[i] for i in np.argsort(-graph.cited_edges)[:1000].tolist()]
    done_path = root / "built.json"
    built: dict[str, Any] = json.loads(done_path.read_text()) if done_path.exists() else {}

    if args.backend in ("sqlite", "both"):
        path = root / "graph.db"
        if "sqlite" not in built:
            path.unlink(missing_ok=True)
            built["sqlite"] = load_sqlite(graph, path)
            done_path.write_text(json.dumps(built))
        size = sum(p.stat().st_size for p in root.glob("graph.db*"))
        sq = built["sqlite"]
        print(
            f"\nSQLite: load {sq['load_s']:.0f} s + index and ANALYZE {sq['index_s']:.0f} s; "
            f"{size / 1e9:.2f} GB"
        )
        store = open_store(f"sqlite+pysqlite:///{path}")
        report("SQLite", measure(SqlCitationRecords(store.engine), keys, top, warm))
        store.close()

    if args.backend in ("postgresql", "both"):
        server = start_server(root / "pg", settings=PG_SETTINGS, reuse=True, timeout=300)
        try:
            url = server.url("graph")
            if "postgresql" not in built:
                import psycopg

                with psycopg.connect(server.url().replace("+psycopg", ""), autocommit=True) as conn:
                    conn.execute("DROP DATABASE IF EXISTS graph")
                    conn.execute("CREATE DATABASE graph")
                built["postgresql"] = load_postgres(graph, url)
                done_path.write_text(json.dumps(built))
            store = open_store(url)
            with store.engine.connect() as conn:
                from sqlalchemy import text

                size = int(conn.execute(text("SELECT pg_database_size('graph')")).scalar_one())
            print(
                f"\nPostgreSQL {server.version}: load {built['postgresql']['load_s']:.0f} s + index and "
                f"VACUUM ANALYZE {built['postgresql']['index_s']:.0f} s; database {size / 1e9:.2f} GB"
            )
            report("PostgreSQL", measure(SqlCitationRecords(store.engine), keys, top, warm))
            store.close()
        finally:
            stop_server(server, remove=False)
    print(f"\nload after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
