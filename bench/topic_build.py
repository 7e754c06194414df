"""Topic build time and peak memory at 10k / ~200k / 1M papers, and the daily placement of 1,000 papers.

Stores (SQLite, cached under ``/work/bench-cache/topic-build-<size>``, reused when present):

* ``10k``: the ~10.6k real hf_daily papers of ../shared/data through paperfeed's own import;
* ``200k``: a consistent copy (SQLite backup API) of bench/speed.py's store ``speed-200000`` (all three
  files of ../shared/data, ~185k real papers, grown to 200k with synthetic ones by
  ``bench.keyword_speed.grow``), or, without it, the three files imported here and grown the same way;
* ``1m``: the 200k store grown to 1,000,000 with ``grow``.

Vectors: the bench vector cache holds no MiniLM vectors of hf_daily or the large corpora (only
``arxiv_cats_4k``), so every paper gets an embedding-like **synthetic** vector (``bench.vector_data``:
a hierarchical anisotropic Gaussian mixture of 300 x 20 centres, 384-d), saved in the ``embeddings``
table as ``paperfeed index`` would.

Measured, each in a fresh child process (wall time; CPU time, user + system, and peak RSS of that child
alone from ``os.wait4``; the build's stages printed as they start): ``paperfeed``'s own
``TopicService.build`` (read, cluster, coarse level, layout, labels, write in one transaction), then
1,000 new papers with vectors placed by ``TopicService.place`` (topic, map place among neighbours, coarse
counts). Prints the CPU model and flags and the load average before and after.

    nice -n 5 .venv/bin/python -m bench.topic_build --size 10k [--size 200k] [--size 1m]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

CACHE = Path(os.environ.get("PAPERFEED_BENCH_CACHE", "/work/bench-cache"))
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
FILES = ["hf_daily.jsonl.gz", "arxiv_cats.jsonl.gz", "arxiv_oai_2007_2017_sample100k.jsonl.gz"]
SIZES = {"10k": 0, "200k": 200_000, "1m": 1_000_000}
MODEL = "synthetic-384"
NEW = "benchnew"


def _settings(root: Path) -> Any:
    from paperfeed.settings import Settings

    return Settings(data_dir=root, database_url=None, embedding_backend="fake")


def _embed_all(root: Path) -> int:
    """A synthetic vector for every paper without one (in rowid order, so the same paper gets the same)."""
    from sqlalchemy import text

    from bench.vector_data import synthetic
    from paperfeed.adapters.store.embeddings import SqlEmbeddingStore
    from paperfeed.bootstrap import build_app
    from paperfeed.domain.embedding import PendingPaper

    app = build_app(_settings(root))
    try:
        with app.core.store.engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT p.id, p.content_hash FROM papers p LEFT JOIN embeddings e ON e.paper_id = p.id "
                    "WHERE e.paper_id IS NULL AND p.id NOT LIKE :new ORDER BY p.rowid"
                ),
                {"new": f"{NEW}:%"},
            ).all()
            have = conn.execute(text("SELECT count(*) FROM embeddings")).scalar_one()
        if rows:
            fill = synthetic(have + len(rows), seed=3)[have:]
            store = SqlEmbeddingStore(app.core.store.engine)
            for start in range(0, len(rows), 20_000):
                part = rows[start : start + 20_000]
                pending = [PendingPaper(pid, "", "", chash or "", False) for pid, chash in part]
                store.save_vectors(MODEL, pending, fill[start : start + len(part)])
        return int(have + len(rows))
    finally:
        app.close()


def prepare(size: str) -> Path:
    """The store for ``size``, made once (see the module docstring)."""
    from paperfeed.bootstrap import build_app

    root = CACHE / f"topic-build-{size}"
    done = root / "ready.json"
    if done.exists():
        return root
    root.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if size == "10k":
        from paperfeed.adapters.sources.jsonl_file import JsonlFileSource

        app = build_app(_settings(root))
        try:
            app.sources.ingest.run(
                JsonlFileSource(SHARED / "hf_daily.jsonl.gz", batch_size=app.settings.batch_size), workers=1
            )
        finally:
            app.close()
    else:
        source = CACHE / ("speed-200000" if size == "200k" else "topic-build-200k") / "paperfeed.db"
        if size == "1m":
            prepare("200k")
        if source.exists():
            with sqlite3.connect(source) as src, sqlite3.connect(root / "paperfeed.db") as dst:
                src.backup(dst)
        else:
            from paperfeed.adapters.sources.jsonl_file import JsonlFileSource

            app = build_app(_settings(root))
            try:
                for name in FILES:
                    app.sources.ingest.run(
                        JsonlFileSource(SHARED / name, batch_size=app.settings.batch_size), workers=1
                    )
            finally:
                app.close()
        from bench.keyword_speed import grow

        app = build_app(_settings(root))
        try:
            grow(app.core.store, SIZES[size], prefix="syn" if size == "200k" else f"syn{size}")
        finally:
            app.close()
    papers = _embed_all(root)
    done.write_text(json.dumps({"papers": papers, "prepare_s": time.perf_counter() - t0}))
    return root


# -- the measured children ----------------------------------------------------------------------------------


def child_build(root: Path) -> dict[str, Any]:
    from paperfeed.bootstrap import build_app

    app = build_app(_settings(root))
    try:
        marks: list[tuple[str, float]] = []
        t0 = time.perf_counter()

        def mark(message: str) -> None:
            marks.append((message, time.perf_counter() - t0))
            print(f"    {time.perf_counter() - t0:8.1f} s  {message}", file=sys.stderr, flush=True)

        summary = app.catalogue.topics.build(mark)
        b = summary.build
        return {
            "papers": b.papers,
            "topics": b.topics,
            "coarse": b.coarse,
            "seconds": summary.seconds,
            "phases": [(m.split(" ")[0], round(t, 1)) for m, t in marks],
            "kept": summary.kept,
        }
    finally:
        app.close()


def child_place(root: Path, n: int) -> dict[str, Any]:
    """``n`` new papers (synthetic vectors) added, then placed; they are removed first if a run left them."""
    from sqlalchemy import text

    from bench.vector_data import synthetic
    from paperfeed.adapters.store.embeddings import SqlEmbeddingStore
    from paperfeed.bootstrap import build_app
    from paperfeed.domain.embedding import PendingPaper
    from paperfeed.domain.ingest import Batch
    from paperfeed.domain.models import Paper, content_hash

    app = build_app(_settings(root))
    try:
        with app.core.store.engine.begin() as conn:
            conn.execute(text("DELETE FROM papers WHERE id LIKE :new"), {"new": f"{NEW}:%"})
        now = datetime.now(UTC)
        made = [
            Paper(
                id=f"{NEW}:{i:05d}",
                title=f"New paper {i}",
                abstract="A new paper placed by the daily topics step.",
                authors=("A. Author",),
                categories=("cs.LG",),
                published=now - timedelta(days=i % 7),
                updated=now,
                upvotes=i % 3,
                sources={"bench": str(i)},
            )
            for i in range(n)
        ]
        app.core.store.apply_batch(Batch(papers=made))
        vectors = synthetic(n, seed=99)
        pending = [
            PendingPaper(p.id, p.title, p.abstract, content_hash(p.title, p.abstract), False) for p in made
        ]
        SqlEmbeddingStore(app.core.store.engine).save_vectors(MODEL, pending, vectors)
        summary = app.catalogue.topics.place()
        with app.core.store.engine.begin() as conn:
            conn.execute(text("DELETE FROM papers WHERE id LIKE :new"), {"new": f"{NEW}:%"})
        return {"placed": summary.placed, "seconds": summary.seconds}
    finally:
        app.close()


def in_child(*args: str) -> tuple[dict[str, Any], float, float, float]:
    """Run this module's ``--child`` in a fresh process: its JSON answer, wall seconds, CPU seconds (user +
    system) and peak RSS (MiB) of that child alone (``os.wait4``'s resource usage). The child's progress
    lines go to stderr as they happen, so a long run shows how far it got."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.topic_build", "--child", *args],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ | {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")},
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"child {args[0]} failed with exit code {proc.returncode}")
    cpu_s = usage.ru_utime + usage.ru_stime
    return json.loads(out.strip().splitlines()[-1]), wall, cpu_s, usage.ru_maxrss / 1024


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", action="append", choices=list(SIZES), help="10k, 200k, 1m (repeatable)")
    parser.add_argument("--place", type=int, default=1000, help="new papers placed after the build")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, root = args.child[0], Path(args.child[1])
        answer = child_build(root) if kind == "build" else child_place(root, int(args.child[2]))
        print(json.dumps(answer))
        return
    from bench.topic_quality import cpu

    print(f"CPU {cpu()}; OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '2')}; nice {os.nice(0)}")
    for size in args.size or ["10k"]:
        t0 = time.perf_counter()
        root = prepare(size)
        ready = json.loads((root / "ready.json").read_text())
        print(f"{size}: store of {ready['papers']:,} papers with vectors ({time.perf_counter() - t0:.0f} s)")
        print(f"  load average before: {Path('/proc/loadavg').read_text().strip()}", flush=True)
        built, wall, cpu_s, rss = in_child("build", str(root))
        print(
            f"  build: {built['papers']:,} papers -> {built['topics']} topics in {built['coarse']} coarse, "
            f"{built['seconds']:.1f} s (process {wall:.1f} s wall, {cpu_s:.1f} s CPU), "
            f"peak RSS {rss:,.0f} MiB; phases {built['phases']}",
            flush=True,
        )
        placed, wall, cpu_s, rss = in_child("place", str(root), str(args.place))
        print(
            f"  place: {placed['placed']:,} new papers in {placed['seconds']:.2f} s (process {wall:.1f} s "
            f"wall, {cpu_s:.1f} s CPU, incl. adding them), peak RSS {rss:,.0f} MiB",
            flush=True,
        )
        print(f"  load average after: {Path('/proc/loadavg').read_text().strip()}", flush=True)


if __name__ == "__main__":
    main()
