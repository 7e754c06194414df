"""Bundled vs adapted all-MiniLM-L6-v2: what ``paperfeed model adapt`` buys, and what training costs.

1. Train an adapted model the way ``paperfeed model adapt`` does (title ↔ abstract pairs, in-batch
   negatives) on ``--train`` arXiv papers of ``arxiv_cats`` (recent listings with primary categories).
   Papers are taken in a fixed pseudo-random order; the evaluation papers come first and are never
   trained on.
2. Held-out arXiv papers (``--eval`` queries, as many distractors): title → abstract nDCG@10 / MRR, and
   the share of each abstract's 10 nearest abstracts with its primary category (``domain.adaptation.measure``,
   the gate's own measures).
3. SciFact (eval only: it is never trained on): BEIR test claims → abstracts, nDCG@10, over the judged
   abstracts plus ``--scifact-docs`` others drawn at random (a sample: the full corpus would take longer
   than this bench's budget on a shared CPU; both models rank the same sample).
4. Seed pages: for every seed paper, the share of its 10 nearest seed papers (dense, title + abstract)
   that share one of its pages.
5. Training time: seconds per 10k training papers at the measured rate, with the CPU model and flags.

    nice -n 10 .venv/bin/python -m bench.adapt_quality [--train 500] [--eval 150] [--threads 1]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import random
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import orjson

from bench.ir_metrics import evaluate, load_qrels
from bench.vector_cache import SHARED, Doc, load_corpus
from paperfeed.adapters.embed.base import resolve_model
from paperfeed.adapters.embed.cpu import cpu_info
from paperfeed.adapters.embed.trainer import SentenceTransformersTrainer
from paperfeed.domain.adaptation import AdaptOptions, CorpusPaper, measure, title_abstract_pairs
from paperfeed.domain.embedding import embedding_text
from paperfeed.domain.search import Embedder


def _order(paper_id: str) -> str:
    return hashlib.blake2b(paper_id.encode(), digest_size=8).hexdigest()


def arxiv_papers(limit: int) -> list[CorpusPaper]:
    """``limit`` arxiv_cats papers with a category, in the same stable pseudo-random order as the CLI."""
    papers: list[CorpusPaper] = []
    with gzip.open(SHARED / "data" / "arxiv_cats.jsonl.gz", "rb") as f:
        for line in f:
            r = orjson.loads(line)
            if r.get("title") and r.get("abstract") and r.get("primary_category"):
                papers.append(CorpusPaper(str(r["id"]), r["title"], r["abstract"], r["primary_category"]))
    papers.sort(key=lambda p: _order(p.paper_id))
    return papers[:limit]


def scifact(embedder: Embedder, extra_docs: int, seed: int = 7) -> float:
    """nDCG@10 of dense retrieval on the BEIR test claims, over the judged abstracts plus a random sample."""
    queries, rel = load_qrels(SHARED / "data" / "qrels_scifact.jsonl.gz", "test")
    docs = load_corpus("scifact")
    judged = {d for r in rel.values() for d in r}
    rng = random.Random(seed)
    others = [d for d in docs if d.id not in judged]
    sample = [d for d in docs if d.id in judged] + rng.sample(others, min(extra_docs, len(others)))
    doc_vecs = embedder.embed([d.text for d in sample])
    ids = list(queries)
    q_vecs = embedder.embed([queries[q] for q in ids])
    ranked = {}
    for qid, row in zip(ids, q_vecs @ doc_vecs.T, strict=True):
        top = np.argsort(-row)[:100]
        ranked[qid] = [sample[i].id for i in top]
    return evaluate(ranked, rel)["ndcg@10"]


def seed_coherence(embedder: Embedder) -> float:
    pages: dict[str, set[str]] = defaultdict(set)
    for line in (SHARED / "seeds" / "seed_papers.jsonl").read_bytes().splitlines():
        row = orjson.loads(line)
        pages[str(row["id"])].add(row["seed_page"])
    unique: list[Doc] = list({d.id: d for d in load_corpus("seeds")}.values())
    vecs = embedder.embed([embedding_text(d.title, d.abstract) for d in unique])
    sims = vecs @ vecs.T
    np.fill_diagonal(sims, -np.inf)
    shares = []
    for i, doc in enumerate(unique):
        top = np.argsort(-sims[i])[:10]
        shares.append(sum(1 for j in top if pages[unique[j].id] & pages[doc.id]) / 10)
    return float(np.mean(shares))


def _spent(wall: float, cpu: float) -> str:
    return f"{time.perf_counter() - wall:,.0f} s wall, {time.process_time() - cpu:,.0f} s CPU"


def report(name: str, base: float | None, adapted: float | None) -> None:
    if base is None or adapted is None:
        print(f"  {name:<34} {'—':>9} {'—':>9}")
        return
    rel = (adapted - base) / base * 100 if base else float("nan")
    print(f"  {name:<34} {base:>9.4f} {adapted:>9.4f} {adapted - base:>+9.4f} ({rel:+.1f}%)")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=500, help="arXiv papers to train on")
    parser.add_argument("--eval", type=int, default=150, help="held-out arXiv queries (as many distractors)")
    parser.add_argument(
        "--scifact-docs", type=int, default=600, help="unjudged SciFact abstracts in the sample"
    )
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--skip", nargs="*", default=[], choices=["scifact", "seeds"])
    args = parser.parse_args(argv)

    print(f"CPU: {cpu_info().describe()}; torch threads: {args.threads}")
    papers = arxiv_papers(2 * args.eval + args.train)
    held, distractors, train = (
        papers[: args.eval],
        papers[args.eval : 2 * args.eval],
        papers[2 * args.eval :],
    )
    assert not {p.paper_id for p in train} & {p.paper_id for p in [*held, *distractors]}
    options = AdaptOptions(
        max_papers=args.train,
        epochs=args.epochs,
        batch_size=args.batch_size,
        max_seq_length=args.max_seq_length,
        threads=args.threads,
        save_steps=10_000,
    )
    trainer = SentenceTransformersTrainer(resolve_model(None))
    with tempfile.TemporaryDirectory(prefix="adapt-bench-") as tmp:
        started, cpu = time.perf_counter(), time.process_time()
        outcome = trainer.train(title_abstract_pairs(train), Path(tmp) / "run", options)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        assert outcome.finished
        assert outcome.model_dir is not None
        per_10k = cpu / len(train) * 10_000 / args.epochs
        print(
            f"trained on {len(train):,} arxiv_cats papers ({outcome.steps_total} steps of {args.batch_size} "
            f"pairs, max_seq_length {args.max_seq_length}, {args.epochs} epoch) in {seconds:,.0f} s wall, "
            f"{cpu:,.0f} s CPU (includes loading the model): {per_10k / 60:,.0f} CPU-minutes per 10k papers "
            f"per epoch at {args.threads} thread(s)"
        )
        base = trainer.embedder(None, args.threads)
        adapted = trainer.embedder(outcome.model_dir, args.threads)
        rows: list[tuple[str, float | None, float | None]] = []
        t0, c0 = time.perf_counter(), time.process_time()
        qb, qa = measure(base.embed, held, distractors), measure(adapted.embed, held, distractors)
        print(f"arXiv held-out measures: {_spent(t0, c0)}")
        rows += [
            (f"arXiv title→abstract nDCG@10 (n={len(held)})", qb.ndcg10, qa.ndcg10),
            ("arXiv title→abstract MRR", qb.mrr, qa.mrr),
            ("arXiv category of 10 nearest", qb.category_at10, qa.category_at10),
        ]
        if "seeds" not in args.skip:
            t0, c0 = time.perf_counter(), time.process_time()
            rows.append(("seed-page coherence@10 (dense)", seed_coherence(base), seed_coherence(adapted)))
            print(f"seed pages: {_spent(t0, c0)}")
        if "scifact" not in args.skip:
            t0, c0 = time.perf_counter(), time.process_time()
            label = f"SciFact nDCG@10 (test, sample +{args.scifact_docs})"
            rows.append((label, scifact(base, args.scifact_docs), scifact(adapted, args.scifact_docs)))
            print(f"SciFact sample: {_spent(t0, c0)}")
    print(f"\n  {'measure':<34} {'bundled':>9} {'adapted':>9} {'change':>9}")
    for name, b, a in rows:
        report(name, b, a)


if __name__ == "__main__":
    main()
