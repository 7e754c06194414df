"""What similar papers by facet cost: store bytes and embedding CPU a paper, measured, per 100k papers (#33).

Real arXiv papers (the 2007-2017 OAI sample, md5 order) go through paperfeed's real composition
(``build_app`` on SQLite, the bundled MiniLM on torch): imported, embedded by the indexer's first pass,
then split, embedded and classified by its second pass (``SentenceIndexer``). Measured:

* **storage**: the bytes SQLite's pages hold for ``paper_sentences`` and its index (``dbstat``), per
  paper, beside the papers' own vector index on disk;
* **embedding cost**: wall and CPU seconds (``time.process_time``, all threads) of each pass, per paper;
* **sentences per paper** on a larger sample (splitting is cheap), since cost scales with it.

The role model is fitted once from the bench vector cache (CSAbstruct's train split, as an instance
trains it; its training embeds 11,333 sentences once per embedding model, which the sentence rate
measured here prices). Extrapolation to 100k papers is linear: both passes work in fixed-size batches.

    .venv/bin/python -m bench.facet_cost [--papers 400]
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from bench.sentence_roles import cpu_flags
from bench.vector_cache import CACHE_ROOT, CORPORA, Doc, VectorCache, read_jsonl, sample_key
from paperfeed.adapters.sentences.roles import LinearRoleModel, read_training
from paperfeed.adapters.sentences.splitter import SentencexSplitter
from paperfeed.bootstrap import build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.sentences import EmbedTexts
from paperfeed.services.sentences import MAX_SENTENCES
from paperfeed.settings import Settings

PER = 100_000


class CachedRoles:
    """:class:`~paperfeed.domain.sentences.RoleModels` with the shipped recipe fitted on cached vectors."""

    def __init__(self, cache: VectorCache) -> None:
        self.cache = cache
        self.model: LinearRoleModel | None = None

    def current(self, embedder_model: str) -> LinearRoleModel | None:
        return self.model if self.model is not None and self.model.embedding_model == embedder_model else None

    def train(self, embed: EmbedTexts) -> LinearRoleModel:
        abstracts = read_training()
        docs = [Doc(f"t{i}:{j}", s, "") for i, (ss, _) in enumerate(abstracts) for j, s in enumerate(ss)]
        vectors = self.cache.vectors("csabstruct_sentences", docs, report=print)
        rows, at = [], 0
        for sentences, labels in abstracts:
            rows.append((vectors[at : at + len(sentences)], labels))
            at += len(sentences)
        texts = [sentences for sentences, _ in abstracts]
        self.model = LinearRoleModel.fit(rows, embedding_model=embed.model_id, texts=texts)
        return self.model


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
    cache = VectorCache.default(args.backend, args.threads)
    with tempfile.TemporaryDirectory(prefix="facet-cost-") as tmp:
        settings = Settings(
            data_dir=Path(tmp) / "data",
            embedding_backend=args.backend,
            embedding_threads=args.threads,
            model_cache=CACHE_ROOT / "models",
        )
        app = build_app(settings)
        try:
            roles = CachedRoles(cache)
            app.indexes.__dict__["role_models"] = roles
            result = app.core.store.apply_batch(Batch(papers=papers_of(chosen)))
            app.indexes.keyword.on_papers_changed(result)
            app.indexes.keyword.flush()
            embedder = app.indexes.embedders.current()
            embedder.embed(["warm the model up"])
            roles.train(embedder)  # fitted before timing: a one-off per embedding model

            wall, cpu = time.perf_counter(), time.process_time()
            app.indexes.indexer.current().run()
            paper_wall, paper_cpu = time.perf_counter() - wall, time.process_time() - cpu
            wall, cpu = time.perf_counter(), time.process_time()
            summary = app.indexes.sentence_indexer.current().run()
            sent_wall, sent_cpu = time.perf_counter() - wall, time.process_time() - cpu
            db = settings.data_dir / "paperfeed.db"
            sentences_bytes = table_bytes(db, "paper_sentences", "ix_paper_sentences_model_paper")
            papers_bytes = table_bytes(db, "papers")
            vector_bytes = folder_bytes(settings.data_dir / "vectors")
            model_id = embedder.model_id
        finally:
            app.close()
    n = len(chosen)
    per_sentence = summary.sentences / max(summary.papers, 1)
    print(
        f"\n## {n} papers through the indexer's two passes "
        f"({model_id}, {args.backend}, {args.threads} thread(s), SQLite)"
    )
    print(
        f"sentence pass: {summary.papers} papers, {summary.sentences:,} sentences "
        f"({per_sentence:.2f} a paper)"
    )
    print(f"{'':<34}{'wall s':>9}{'CPU s':>9}{'CPU s/paper':>13}{'CPU h per 100k':>16}")
    for label, w, c in (
        ("papers' own vectors (pass 1)", paper_wall, paper_cpu),
        ("sentences (pass 2)", sent_wall, sent_cpu),
    ):
        print(f"{label:<34}{w:>9.1f}{c:>9.1f}{c / n:>13.3f}{c / n * PER / 3600:>16.1f}")
    print(
        f"the sentences cost {sent_cpu / max(paper_cpu, 1e-9):.2f}x the papers' own embedding in CPU; "
        f"wall time on the 2 shared cores: {sent_wall / n * PER / 3600:.1f} h per 100k papers"
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
    print(
        f"the training embedding of the role model (11,333 sentences, once per embedding model) takes about "
        f"{sent_cpu / max(summary.sentences, 1) * 11_333:.0f} s CPU at this sentence rate"
    )


if __name__ == "__main__":
    main()
