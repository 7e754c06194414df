"""End-to-end search speed at ~200k and 1M papers: build, size, RSS and latency of keyword, dense, hybrid.

Build (cached in ``/work/bench-cache/speed-<N>``, reused when present): the three real files of
../shared/data go in through paperfeed's own import (keyword index wired as the CLI wires it); the store
is then grown to N with synthetic papers whose words follow the real abstracts' unigram distribution
(``bench.keyword_speed.grow``); the keyword index catches up; the vector index is built through the
adapter with a real vector for every paper the bench vector cache holds (``bench.vector_cache``) and
embedding-like synthetic vectors (``bench.vector_data``) for the rest.

Measure (a fresh child process, as a server would run): open the app from the data folder, load the
embedder and the indexes, then time k=10 searches: keyword alone, dense alone (query embedding included)
and hybrid through the search service (query embedding, both lists, fusion, paper fetch, highlighting),
each unfiltered and with a selective filter; ANN recall@10 against exact search over the same vectors;
the serving process's RSS.

    .venv/bin/python -m bench.speed [--sizes 200000 1000000] [--queries 200] [--warmup 500]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import text

CACHE = Path(os.environ.get("PAPERFEED_BENCH_CACHE", "/work/bench-cache"))
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
FILES = ["hf_daily.jsonl.gz", "arxiv_cats.jsonl.gz", "arxiv_oai_2007_2017_sample100k.jsonl.gz"]
COMMON = [
    "learning",
    "model",
    "neural network",
    "deep learning",
    "language models",
    "data",
    "method",
    "large language models",
    "image",
    "performance",
]


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def build(size: int, root: Path) -> dict[str, Any]:
    from bench.keyword_speed import grow
    from bench.vector_cache import CORPORA, VectorCache
    from bench.vector_data import synthetic
    from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
    from paperfeed.bootstrap import build_app
    from paperfeed.domain.search import VectorRecord
    from paperfeed.settings import Settings

    done = root / "built.json"
    if done.exists():
        return dict(json.loads(done.read_text()))
    root.mkdir(parents=True, exist_ok=True)
    app = build_app(Settings(data_dir=root))
    figures: dict[str, Any] = {"papers": size}
    t0 = time.perf_counter()
    for name in FILES:
        app.sources.ingest.run(JsonlFileSource(SHARED / name, batch_size=app.settings.batch_size), workers=1)
    app.indexes.keyword.flush()
    figures["import_s"] = time.perf_counter() - t0
    grow(app.core.store, size)
    t0 = time.perf_counter()
    app.indexes.keyword.rebuild()
    figures["keyword_build_s"] = time.perf_counter() - t0
    # vectors: real where the bench cache has them, embedding-like synthetic for the rest
    cache = VectorCache.default()
    real: dict[str, np.ndarray] = {}
    for corpus in CORPORA:
        if corpus not in ("scifact", "seeds"):
            real.update(cache.cached(corpus))
    with app.core.store.engine.connect() as conn:
        rows = conn.execute(
            text("SELECT id, content_hash, published, categories, github_repo FROM papers ORDER BY rowid")
        ).all()
    fill = synthetic(len(rows), seed=3)
    model_id = app.indexes.embedders.current().model_id
    t0 = time.perf_counter()
    index = app.indexes.vector_index(model_id=model_id, dimension=fill.shape[1], fresh=True)
    used_real = 0
    batch: list[VectorRecord] = []
    for i, (pid, chash, published, cats, repo) in enumerate(rows):
        vec = real.get(chash)
        used_real += vec is not None
        day = date.fromisoformat(str(published)[:10]) if published else None
        cats_list = json.loads(cats) if isinstance(cats, str) else cats
        batch.append(VectorRecord(pid, fill[i] if vec is None else vec, day, tuple(cats_list), bool(repo)))
        if len(batch) == 50_000:
            index.upsert(batch)
            batch = []
    index.upsert(batch)
    index.save()
    figures["vector_build_s"] = time.perf_counter() - t0
    figures["real_vectors"] = used_real
    figures["db_mb"] = (root / "paperfeed.db").stat().st_size / 2**20
    figures["keyword_mb"] = dir_size(root / "keyword") / 2**20 if (root / "keyword").exists() else None
    figures["vector_mb"] = dir_size(root / "vectors") / 2**20
    app.close()
    done.write_text(json.dumps(figures))
    return figures


def measure(root: Path, queries_n: int, warmup_n: int) -> dict[str, Any]:
    """Child process: serve-like timings. Prints one JSON object."""
    from paperfeed.bootstrap import build_app
    from paperfeed.domain.query import parse_query
    from paperfeed.domain.search import SearchFilters
    from paperfeed.settings import Settings

    app = build_app(Settings(data_dir=root))
    rng = random.Random(5)
    with app.core.store.engine.connect() as conn:
        titles = [r[0] for r in conn.execute(text("SELECT title FROM papers WHERE id NOT LIKE 'syn:%'"))]
    sample = rng.sample(titles, queries_n + warmup_n)
    queries = [" ".join(t.split()[: rng.randint(3, 6)]) for t in sample[:queries_n]] + COMMON
    warmup = [" ".join(t.split()[: rng.randint(3, 6)]) for t in sample[queries_n:]]
    selective = SearchFilters(categories=("astro-ph.CO",), date_from=date(2010, 1, 1))
    embedder = app.indexes.embedders.current()
    index = app.indexes.vectors.current()
    assert index is not None
    embedder.embed(["warm up"])
    app.search.hybrid.search("warm up")
    # A server that has been answering for a while: other queries first (not timed), so the timed ones
    # meet the index pages and caches a running server has, not a process's first page faults.
    t0 = time.perf_counter()
    for q in warmup:
        app.search.hybrid.search(q, limit=10)
    warm_s = time.perf_counter() - t0

    def timed(fn: Any) -> dict[str, float]:
        lat = []
        for q in queries:
            t0 = time.perf_counter()
            fn(q)
            lat.append(time.perf_counter() - t0)
        return {"p50_ms": float(np.percentile(lat, 50) * 1e3), "p99_ms": float(np.percentile(lat, 99) * 1e3)}

    out: dict[str, Any] = {"warmup": f"{len(warmup)} other queries in {warm_s:.1f} s"}
    for label, filters in (("", None), (" +filter", selective)):

        def kw(q: str, f: SearchFilters | None = filters) -> object:
            from paperfeed.domain.query import with_filters

            return app.indexes.keyword.search(with_filters(parse_query(q), f), 10)

        def dense(q: str, f: SearchFilters | None = filters) -> object:
            return index.search(embedder.embed([q])[0], 10, f)

        def hybrid(q: str, f: SearchFilters | None = filters) -> object:
            return app.search.hybrid.search(q, f, limit=10)

        out["keyword" + label] = timed(kw)
        out["dense (with query embedding)" + label] = timed(dense)
        app.search.hybrid._query_cache.clear()
        out["hybrid (service)" + label] = timed(hybrid)
        out["query embedding alone"] = timed(lambda q: embedder.embed([q]))
    # the serving process's memory, before the exact index opened below for the recall check
    status = dict(
        line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line
    )
    for key in ("VmRSS", "RssAnon", "RssFile"):  # private memory vs mapped files (shareable page cache)
        out[key.lower() + "_mb"] = int(status[key].split()[0]) / 1024
    # ANN recall@10 against exact search over the very same stored vectors. The queries are perturbed
    # copies of stored vectors (bench.vector_data.queries_like), so they come from the index's own
    # distribution: most stored vectors are synthetic until the bench cache holds real ones for all.
    from bench.vector_data import queries_like
    from paperfeed.adapters.vector import open_vector_index

    with app.core.store.engine.connect() as conn:
        ids = random.Random(7).sample([r[0] for r in conn.execute(text("SELECT id FROM papers"))], 2000)
    stored = [v for pid in ids if (v := index.vector(pid)) is not None]
    qv = queries_like(np.stack(stored).astype(np.float32), 300)
    flat = open_vector_index(
        root / "vectors", kind="exact", model_id=embedder.model_id, dimension=qv.shape[1]
    )
    for label, filters in (("", None), (" +filter", selective)):
        truth = [[h.paper_id for h in flat.search(v, 10, filters)] for v in qv]
        found = [[h.paper_id for h in index.search(v, 10, filters)] for v in qv]
        hits = sum(len(set(a) & set(b)) for a, b in zip(found, truth, strict=True))
        out["ann_recall@10" + label] = hits / max(sum(len(t) for t in truth), 1)
    out["index_kind"] = index.manifest.kind
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[200_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=500, help="untimed queries first (a running server)")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.queries, args.warmup)))
        return
    for size in args.sizes:
        root = CACHE / f"speed-{size}"
        t0 = time.perf_counter()
        figures = build(size, root)
        print(f"\n== {size:,} papers (built in {time.perf_counter() - t0:,.0f} s now; cached in {root})")
        for key, value in figures.items():
            print(f"  {key:18s} {value:,.1f}" if isinstance(value, float) else f"  {key:18s} {value}")
        command = [
            sys.executable,
            "-m",
            "bench.speed",
            "--measure",
            str(root),
            "--queries",
            str(args.queries),
        ]
        child = subprocess.run(
            [*command, "--warmup", str(args.warmup)],
            capture_output=True,
            text=True,
            check=True,
        )
        result = json.loads(child.stdout.strip().splitlines()[-1])
        print(f"  {'search (k=10)':40s} {'p50 ms':>8s} {'p99 ms':>8s}")
        for key, value in result.items():
            if isinstance(value, dict):
                print(f"  {key:40s} {value['p50_ms']:8.1f} {value['p99_ms']:8.1f}")
        shown: tuple[str, ...] = ("warmup", "ann_recall@10", "ann_recall@10 +filter", "index_kind")
        shown += ("vmrss_mb", "rssanon_mb", "rssfile_mb")
        for key in shown:
            print(f"  {key:40s} {result[key]}")


if __name__ == "__main__":
    main()
