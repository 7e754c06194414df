"""Keyword engine speed: FTS5 vs tantivy at ~185k real papers and at 1M (real + synthetic).

Phases (each optional):

* ``import``: ``paperfeed``'s ingest of the three real files into a fresh store, once with no keyword
  listener (baseline), once per engine with the wiring the CLI uses; papers/s and CPU seconds.
* ``query``: on the 185k store, each engine's index build time and size, then p50/p99 latency (k=100)
  of rare-word, common-word, phrase and filtered queries; then the same after growing the store to
  ``--big`` papers with synthetic ones whose words are sampled from the real abstracts' vocabulary
  (unigram frequencies, real title/abstract lengths, real category/date mix).

    .venv/bin/python -m bench.keyword_speed                     # everything (~15 min on 2 cores)
    .venv/bin/python -m bench.keyword_speed --phases query --big 0
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from sqlalchemy import func, select, text

from paperfeed.adapters.keyword.fts5 import Fts5KeywordIndex, suspend_fts5
from paperfeed.adapters.keyword.tantivy_index import TantivyKeywordIndex
from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.adapters.store import SqlPaperStore, open_store
from paperfeed.adapters.store.schema import papers
from paperfeed.bootstrap import build_app
from paperfeed.domain.ingest import IngestSummary
from paperfeed.domain.query import parse_query
from paperfeed.settings import Settings

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
FILES = ["hf_daily.jsonl.gz", "arxiv_cats.jsonl.gz", "arxiv_oai_2007_2017_sample100k.jsonl.gz"]
K = 100
REPEAT = 5

COMMON = ["learning", "model", "models", "network", "data", "deep learning", "language model", "neural"]
PHRASES = [
    '"neural network"',
    '"large language models"',
    '"dark matter"',
    '"reinforcement learning"',
    '"graph neural networks"',
    '"magnetic field"',
    '"state of the art"',
    '"black hole"',
]
FILTERED = [
    "learning cat:cs.CL",
    "model cat:hep-th",
    "network year:2015",
    "data after:2025",
    "language model cat:cs.CL after:2024",
    "transformer cat:cs.CV year:2025",
    "quantum before:2010",
    "diffusion model cat:cs.CV cat:cs.LG",
]


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


# -- import -------------------------------------------------------------------------------------------


def import_run(
    root: Path, engine: str | None, files: list[Path], workers: int, cores: int
) -> dict[str, float]:
    """Ingest ``files`` into a fresh store; ``engine=None`` runs without the keyword listener."""
    shutil.rmtree(root, ignore_errors=True)
    app = build_app(Settings(data_dir=root, keyword_engine=engine or "fts5"))  # type: ignore[arg-type]
    service = app.sources.ingest
    if engine is None:  # no listener, and FTS5's triggers idle (as while tantivy serves)
        service.indexes.clear()
        suspend_fts5(app.core.store.engine)
    summary = IngestSummary()
    before, main, started = os.times(), time.thread_time(), time.perf_counter()
    for path in files:
        service.run(
            JsonlFileSource(path, batch_size=app.settings.batch_size), summary=summary, workers=workers
        )
    main = time.thread_time() - main
    app.close()  # tantivy: waits for its queue and merges; part of the cost
    wall = time.perf_counter() - started
    after = os.times()
    process = after.user + after.system - before.user - before.system
    children = after.children_user + after.children_system - before.children_user - before.children_system
    # On an idle machine with `cores` cores the run takes at least max(main thread, all CPU / cores):
    # a load-independent estimate, since this machine is shared with other jobs.
    bound = max(main, (process + children) / cores)
    return {
        "papers": summary.seen,
        "wall": wall,
        "rate": summary.seen / wall,
        "main": main,
        "process": process,
        "children": children,
        "idle_rate": summary.seen / bound,
    }


# -- queries ------------------------------------------------------------------------------------------


def rare_words(store: SqlPaperStore, n: int, seed: int = 7) -> list[str]:
    """Words found in 5-50 titles of a sample: rare, but real."""
    counts: Counter[str] = Counter()
    with store.engine.connect() as conn:
        for (title,) in conn.execute(text("SELECT title FROM papers ORDER BY rowid LIMIT 60000")):
            counts.update(w for w in title.lower().split() if w.isalpha() and len(w) > 6)
    pool = sorted(w for w, c in counts.items() if 5 <= c <= 50)
    return random.Random(seed).sample(pool, min(n, len(pool)))


def latency(search: Callable[[Any, int], list[Any]], queries: list[str]) -> dict[str, float]:
    times: list[float] = []
    hits = 0
    for q in queries:
        parsed = parse_query(q)
        search(parsed, K)  # warm-up
        for _ in range(REPEAT):
            t = time.perf_counter()
            hits += len(search(parsed, K))
            times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return {
        "p50": statistics.median(times),
        "p99": times[min(len(times) - 1, round(0.99 * (len(times) - 1)))],
        "hits": hits / len(times),
    }


def fts5_size(store: SqlPaperStore) -> int:
    with store.engine.connect() as conn:
        return int(
            conn.execute(text("SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'papers_fts%'")).scalar() or 0
        )


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def query_phase(store: SqlPaperStore, root: Path, label: str) -> None:
    with store.engine.connect() as conn:
        count = conn.execute(select(func.count()).select_from(papers)).scalar_one()
    print(f"\n== {label}: {count:,} papers ==", flush=True)
    fts = Fts5KeywordIndex(store.engine, sync=False)
    started = time.perf_counter()
    fts.rebuild()
    fts_build = time.perf_counter() - started
    started = time.perf_counter()
    fts.optimize()
    fts_opt = time.perf_counter() - started
    tv_dir = root / "keyword"
    shutil.rmtree(tv_dir, ignore_errors=True)
    started = time.perf_counter()
    tv = TantivyKeywordIndex(tv_dir, store.engine)  # opening an empty folder builds the index
    tv.close()
    tv_build = time.perf_counter() - started
    print(
        f"build: fts5 rebuild {fts_build:.1f} s (+ optimize {fts_opt:.1f} s), "
        f"{fts5_size(store) / 1e6:.0f} MB; "
        f"tantivy {tv_build:.1f} s, {dir_size(tv_dir) / 1e6:.0f} MB",
        flush=True,
    )
    sets = {
        "rare word": rare_words(store, 20),
        "common word": COMMON,
        "phrase": PHRASES,
        "filtered": FILTERED,
    }
    print(f"{'queries':12s} {'engine':8s} {'p50 ms':>8s} {'p99 ms':>8s} {'hits':>6s}")
    for name, queries in sets.items():
        for engine, index in (("fts5", fts), ("tantivy", tv)):
            r = latency(index.search, queries)
            print(f"{name:12s} {engine:8s} {r['p50']:8.1f} {r['p99']:8.1f} {r['hits']:6.1f}", flush=True)
    fts.close()


# -- synthetic growth ---------------------------------------------------------------------------------


def grow(store: SqlPaperStore, target: int, seed: int = 11, prefix: str = "syn") -> None:
    """Add synthetic papers until ``target``: words drawn from the real abstracts' unigram distribution.

    Their ids are ``<prefix>:0000000`` on; a store grown once already needs another ``prefix``."""
    rng = np.random.default_rng(seed)
    counts: Counter[str] = Counter()
    title_lens: list[int] = []
    abs_lens: list[int] = []
    facets: list[tuple[str, Any]] = []
    with store.engine.connect() as conn:
        have = conn.execute(select(func.count()).select_from(papers)).scalar_one()
        rows = conn.execute(text("SELECT title, abstract, categories, published FROM papers")).all()
    for title, abstract, cats, published in rows:
        t, a = title.split(), abstract.split()
        counts.update(t)
        counts.update(a)
        title_lens.append(len(t))
        abs_lens.append(len(a))
        facets.append((cats, published))
    vocab = np.array(list(counts), dtype=object)
    p = np.array(list(counts.values()), dtype=np.float64)
    p /= p.sum()
    now = datetime.now(UTC)
    need = target - have
    made = 0
    chunk = 20_000
    while made < need:
        n = min(chunk, need - made)
        tl = rng.choice(title_lens, n)
        al = rng.choice(abs_lens, n)
        words = vocab[rng.choice(len(vocab), int(tl.sum() + al.sum()), p=p)]
        fi = rng.integers(0, len(facets), n)
        batch: list[dict[str, Any]] = []
        pos = 0
        for i in range(n):
            title = " ".join(words[pos : pos + tl[i]])
            pos += tl[i]
            abstract = " ".join(words[pos : pos + al[i]])
            pos += al[i]
            cats, published = facets[fi[i]]
            if isinstance(published, str):
                published = datetime.fromisoformat(published)
            batch.append(
                {
                    "id": f"{prefix}:{made + i:07d}",
                    "title": title,
                    "abstract": abstract,
                    "authors": ["Syn Author"],
                    "categories": orjson.loads(cats) if isinstance(cats, str) else cats,
                    "primary_category": None,
                    "published": datetime.fromisoformat(published)
                    if isinstance(published, str)
                    else published,
                    "ai_keywords": [],
                    "sources": {"synthetic": now.isoformat()},
                    "content_hash": "0" * 32,
                    "created_at": now,
                    "modified_at": now,
                }
            )
        with store.engine.begin() as conn:
            conn.execute(papers.insert(), batch)
        made += n
    with store.engine.begin() as conn:  # the bench rebuilds FTS5 itself; the queue would only be drained
        conn.execute(text("DELETE FROM papers_fts_queue"))
    print(f"grew the store by {need:,} synthetic papers (vocabulary {len(vocab):,} words)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--phases", nargs="+", default=["import", "query"], choices=["import", "query"])
    parser.add_argument("--big", type=int, default=1_000_000, help="grow to this many papers (0: skip)")
    parser.add_argument("--workers", type=int, default=1, help="validation worker processes for import")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--from-db", type=Path, default=None, help="query phase: copy this imported store")
    args = parser.parse_args()
    files = [args.data / f for f in FILES]
    work = Path(tempfile.mkdtemp(prefix="pf-kwspeed-", dir=args.workdir))
    try:
        if "import" in args.phases:
            cores = os.cpu_count() or 1
            print(
                f"== import of the three real files ({cores} cores, load average {os.getloadavg()[0]:.1f}) =="
            )
            print("CPU s: main thread / whole process incl. tantivy threads / validation worker processes")
            for engine in (None, "fts5", "tantivy"):
                r = import_run(work / f"import-{engine}", engine, files, args.workers, cores)
                print(
                    f"{engine or 'no index':9s} {r['papers']:,.0f} papers in {r['wall']:6.1f} s = "
                    f"{r['rate']:6,.0f} papers/s; CPU {r['main']:5.1f} / {r['process']:5.1f} / "
                    f"{r['children']:5.1f} s -> idle-machine bound {r['idle_rate']:6,.0f} papers/s",
                    flush=True,
                )
        if "query" in args.phases:
            root = work / "query"
            source_db = args.from_db or work / "import-None" / "paperfeed.db"
            root.mkdir(parents=True, exist_ok=True)
            if source_db.exists():
                shutil.copy(source_db, root / "paperfeed.db")
            store = open_store(f"sqlite+pysqlite:///{root / 'paperfeed.db'}")
            if not source_db.exists():
                app = build_app(Settings(data_dir=root, keyword_engine="fts5"))
                app.sources.ingest.indexes.clear()
                for path in files:
                    app.sources.ingest.run(
                        JsonlFileSource(path, batch_size=app.settings.batch_size), workers=args.workers
                    )
                app.close()
            query_phase(store, root, "real papers")
            if args.big:
                grow(store, args.big)
                query_phase(store, root, "real + synthetic papers")
            store.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
