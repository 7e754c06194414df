"""What similar papers by facet cost: store bytes and embedding CPU a paper, measured, per 100k papers (#33).

Real arXiv papers (the 2007-2017 OAI sample, md5 order) go through paperfeed's real composition
(``build_app`` on SQLite, the bundled MiniLM, the shipped role model), in two fresh data folders:

* **one pass** (what ``paperfeed index`` does since #39): each batch's papers embedded with their
  sentences, the sentence vectors pooled from the papers' own forward pass (late chunking);
* **vectors only** (``paperfeed index --no-sentences``), then the sentences alone (the second pass, as it
  runs for papers embedded without theirs: another forward pass over each paper's text).

Measured: wall and CPU seconds (``time.process_time``, all threads) of each, per paper and their ratio;
the bytes SQLite's pages hold for ``paper_sentences`` and its index (``dbstat``), per paper, beside the
papers' own vector index on disk; and the sentences per paper on a larger sample (splitting is cheap).
Extrapolation to 100k papers is linear: the passes work in fixed-size batches.

    .venv/bin/python -m bench.facet_cost [--papers 400]
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from bench.sentence_roles import cpu_flags
from bench.vector_cache import CACHE_ROOT, CORPORA, Doc, read_jsonl, sample_key
from paperfeed.adapters.sentences.splitter import SentencexSplitter
from paperfeed.bootstrap import App, build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.services.sentences import MAX_SENTENCES
from paperfeed.settings import Settings

PER = 100_000


def table_bytes(db: Path, *names: str) -> int:
    with sqlite3.connect(db) as con:
        marks = ",".join("?" * len(names))
        found = con.execute(f"SELECT SUM(pgsize) FROM dbstat WHERE name IN ({marks})", names).fetchone()
    return int(found[0] or 0)


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def papers_of(docs: Sequence[Doc]) -> list[Paper]:
    return [
        Paper(
            id=d.id,
            title=d.title,
            abstract=d.abstract,
            authors=("A. Author",),
            categories=("cs.LG",),
            published=datetime(2015, 1, 1, tzinfo=UTC),
        )
        for d in docs
    ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--papers", type=int, default=400, help="papers through both indexer passes")
    parser.add_argument("--split-sample", type=int, default=20_000, help="abstracts for sentence counts")
    parser.add_argument("--backend", default="onnx", help="embedding backend (onnx float32: torch's vectors)")
    parser.add_argument(
        "--threads", type=int, default=1, help="embedding threads (1: CPU time without overhead)"
    )
    args = parser.parse_args(argv)
    print(f"CPU: {platform.machine()}, {os.cpu_count()} cores, {cpu_flags()}")
    arxiv = [d for d in read_jsonl(CORPORA["arxiv_oai"]) if d.abstract]
    arxiv.sort(key=lambda d: sample_key(d.id))

    splitter = SentencexSplitter()
    sample = arxiv[: args.split_sample]
    started = time.process_time()
    counts = np.array([min(len(splitter.split(d.abstract)), MAX_SENTENCES) for d in sample])
    split_cpu = time.process_time() - started
    print(f"\n## sentences per abstract ({len(sample):,} arXiv abstracts 2007-2017, md5 order)")
    print(
        f"mean {counts.mean():.2f}, median {np.median(counts):.0f}, 90th percentile "
        f"{np.percentile(counts, 90):.0f}, max {counts.max()} (capped at {MAX_SENTENCES}); "
        f"splitting {split_cpu / len(sample) * 1000:.2f} ms CPU an abstract"
    )

    chosen = arxiv[: args.papers]

    def fresh(tmp: str, name: str) -> tuple[Settings, App]:
        settings = Settings(
            data_dir=Path(tmp) / name,
            embedding_backend=args.backend,
            embedding_threads=args.threads,
            model_cache=CACHE_ROOT / "models",
        )
        app = build_app(settings)
        result = app.core.store.apply_batch(Batch(papers=papers_of(chosen)))
        app.indexes.keyword.on_papers_changed(result)
        app.indexes.keyword.flush()
        app.indexes.embedders.current().embed(["warm the model up"])
        return settings, app

    def timed(work: Callable[[], object]) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        work()
        return time.perf_counter() - wall, time.process_time() - cpu

    with tempfile.TemporaryDirectory(prefix="facet-cost-") as tmp:
        settings, app = fresh(tmp, "one-pass")
        try:
            one = timed(lambda: app.indexes.indexer.current().run())
            summary = app.indexes.sentence_indexer.current().run()  # nothing left: the plan's check only
            assert summary.papers == 0, f"{summary.papers} papers were left for the second pass"
            db = settings.data_dir / "paperfeed.db"
            sentences_bytes = table_bytes(db, "paper_sentences", "ix_paper_sentences_model_paper")
            papers_bytes = table_bytes(db, "papers")
            vector_bytes = folder_bytes(settings.data_dir / "vectors")
            model_id = app.indexes.embedders.current().model_id
            stored = app.indexes.sentences.sentences(
                [d.id for d in chosen], app.indexes.sentence_indexer.current().model_id
            )
            sentence_count = sum(len(r.sentences) for r in stored.values())
        finally:
            app.close()
        _, app = fresh(tmp, "two-passes")
        try:
            alone = timed(lambda: app.indexes.indexer.current().run(sentences=False))
            second = timed(lambda: app.indexes.sentence_indexer.current().run())
        finally:
            app.close()
    n = len(chosen)
    print(
        f"\n## {n} papers, {sentence_count:,} sentences ({sentence_count / n:.2f} a paper): "
        f"{model_id}, {args.backend}, {args.threads} thread(s), SQLite"
    )
    print(f"{'':<46}{'wall s':>9}{'CPU s':>9}{'CPU s/paper':>13}{'CPU h per 100k':>16}{'x vectors':>11}")
    for label, (w, c) in (
        ("papers' vectors only (--no-sentences)", alone),
        ("one pass: vectors and sentences (shipped)", one),
        ("sentences alone, a second pass", second),
    ):
        print(
            f"{label:<46}{w:>9.1f}{c:>9.1f}{c / n:>13.3f}{c / n * PER / 3600:>16.1f}"
            f"{c / max(alone[1], 1e-9):>11.2f}"
        )
    both = (alone[1] + second[1]) / max(alone[1], 1e-9)
    print(
        f"one pass costs {one[1] / max(alone[1], 1e-9):.2f}x the CPU of the vectors alone "
        f"(vectors, then a second pass for the sentences: {both:.2f}x)"
    )
    print(f"\n## storage (SQLite pages, dbstat) for {n} papers")
    print(
        f"paper_sentences + its index: {sentences_bytes:,} bytes = {sentences_bytes / n:,.0f} bytes a paper "
        f"-> {sentences_bytes / n * PER / 2**30:.2f} GiB per 100k papers"
    )
    print(
        f"(for scale: the papers table {papers_bytes / n:,.0f} bytes a paper; the papers' vector index "
        f"{vector_bytes / n:,.0f} bytes a paper on disk)"
    )
    print("the role model ships trained for the bundled model: no training is counted or needed")


if __name__ == "__main__":
    main()
