"""Ranking metrics shared by the keyword and hybrid search benches (BEIR / trec_eval conventions).

``qrels`` maps query id → {doc id: graded relevance}; a run maps query id → ranked doc ids (best first).
nDCG uses linear gain (``rel / log2(rank + 1)``), as BEIR's pytrec_eval does; queries without any
relevant document are skipped, as trec_eval does.
"""

from __future__ import annotations

import gzip
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import orjson

__all__ = ["evaluate", "load_qrels", "mrr_at_k", "ndcg_at_k", "recall_at_k"]

Qrels = Mapping[str, Mapping[str, int]]


def ndcg_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    dcg = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted((r for r in relevant.values() if r > 0), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    wanted = {doc for doc, r in relevant.items() if r > 0}
    if not wanted:
        return 0.0
    return len(wanted.intersection(ranked[:k])) / len(wanted)


def mrr_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    for i, doc in enumerate(ranked[:k]):
        if relevant.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def evaluate(
    run: Mapping[str, Sequence[str]], qrels: Qrels, ks: Iterable[int] = (10, 100)
) -> dict[str, float]:
    """Mean nDCG@k, recall@k and MRR@k over the judged queries (a query missing from ``run`` scores 0)."""
    judged = [q for q, rel in qrels.items() if any(r > 0 for r in rel.values())]
    out: dict[str, float] = {"queries": float(len(judged))}
    for k in ks:
        for name, fn in (("ndcg", ndcg_at_k), ("recall", recall_at_k), ("mrr", mrr_at_k)):
            scores = [fn(run.get(q, ()), qrels[q], k) for q in judged]
            out[f"{name}@{k}"] = sum(scores) / len(scores) if scores else 0.0
    return out


def load_qrels(path: Path, split: str, prefix: str = "") -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """(query id → query text, qrels) for one ``beir_split`` of a ``qrels_*.jsonl.gz`` file."""
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with gzip.open(path, "rb") as fh:
        for line in fh:
            row = orjson.loads(line)
            if row.get("beir_split") != split:
                continue
            queries[row["query_id"]] = row["query"]
            qrels[row["query_id"]][prefix + str(row["doc_id"])] = int(row["relevance"])
    return queries, dict(qrels)
