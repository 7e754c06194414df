"""Fusing ranked lists: weighted reciprocal rank fusion, the heart of hybrid search.

RRF (Cormack et al., 2009) scores a document by ``sum_i w_i / (k + rank_i)`` over the lists it appears
in, with 1-based ranks. It needs no score calibration between BM25 and cosine similarity, which is why
it is robust; ``k`` (60 by default) damps the advantage of the very top ranks, and the weights let one
list count more than the other (tuned on the SciFact *train* split: see docs/search.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .search import ScoredId

__all__ = ["FusedId", "WeightedList", "fuse_weighted", "reciprocal_rank_fusion"]


@dataclass(frozen=True, slots=True)
class FusedId:
    paper_id: str
    score: float
    ranks: tuple[int | None, ...]  # 1-based rank in each input list, None where absent


def reciprocal_rank_fusion(
    lists: Sequence[Sequence[ScoredId]], weights: Sequence[float] | None = None, k: float = 60.0
) -> list[FusedId]:
    """Fuse best-first lists into one best-first list (ties broken by best single rank, then id)."""
    if weights is None:
        weights = [1.0] * len(lists)
    if len(weights) != len(lists):
        raise ValueError("one weight per list")
    if k < 0:
        raise ValueError("k must be >= 0")
    scores: dict[str, float] = {}
    ranks: dict[str, list[int | None]] = {}
    for i, (items, weight) in enumerate(zip(lists, weights, strict=True)):
        seen: set[str] = set()
        for rank, item in enumerate(items, start=1):
            if item.paper_id in seen:  # a list naming a document twice counts its best rank only
                continue
            seen.add(item.paper_id)
            scores[item.paper_id] = scores.get(item.paper_id, 0.0) + weight / (k + rank)
            ranks.setdefault(item.paper_id, [None] * len(lists))[i] = rank
    fused = [FusedId(pid, score, tuple(ranks[pid])) for pid, score in scores.items()]
    fused.sort(key=lambda f: (-f.score, min(r for r in f.ranks if r is not None), f.paper_id))
    return fused


@dataclass(frozen=True, slots=True)
class WeightedList:
    """One named, weighted, best-first list to fuse: "dense", "keyword", later "co-citation", ..."""

    name: str
    weight: float
    items: Sequence[ScoredId]


def fuse_weighted(lists: Sequence[WeightedList], k: float = 60.0) -> list[FusedId]:
    """:func:`reciprocal_rank_fusion` over named lists; ``FusedId.ranks`` follow the order of ``lists``.

    A list of weight 0 still reports its ranks but adds nothing to the scores, so a source can be
    switched off by a setting without changing what callers can read.
    """
    return reciprocal_rank_fusion([w.items for w in lists], [max(0.0, w.weight) for w in lists], k=k)
