"""Fusing ranked lists: weighted reciprocal rank fusion, the heart of hybrid search.

RRF (Cormack et al., 2009) scores a document by ``sum_i w_i / (k + rank_i)`` over the lists it appears
in, with 1-based ranks. It needs no score calibration between BM25 and cosine similarity, which is why
it is robust; ``k`` (60 by default) damps the advantage of the very top ranks, and the weights let one
list count more than the other (tuned on the SciFact *train* split: see docs/search.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .search import ScoredId

__all__ = ["FusedId", "WeightedList", "blend_evidence", "fuse_weighted", "reciprocal_rank_fusion"]


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


def blend_evidence(
    candidates: Sequence[str],
    cosines: Mapping[str, float],
    evidence: Sequence[tuple[float, Mapping[str, float]]],
) -> list[ScoredId]:
    """Candidates scored by their cosine to the paper plus ``weight · sqrt(evidence)`` of each
    ``(weight, evidence)``, best first; ties keep the order of ``candidates``.

    Used where a list's scores are evidence of a strength of their own (the citation graph's, in "similar
    papers"), so a paper with strong links rises far and one with a single weak link barely moves, where
    RRF would give the top of any list the same push. The square root damps a graph much denser than
    the one the weight was chosen on (four times the evidence only doubles its part). A candidate without
    a cosine (not embedded) counts 0 there; one without evidence, 0 there.
    """
    scored = []
    for paper_id in candidates:
        score = cosines.get(paper_id, 0.0)
        for weight, found in evidence:
            score += weight * math.sqrt(max(found.get(paper_id, 0.0), 0.0))
        scored.append(ScoredId(paper_id, score))
    scored.sort(key=lambda s: -s.score)  # stable
    return scored
