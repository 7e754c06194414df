"""Similar lists by settings, in NumPy over cached candidate lists (bench/facet_lists.py), for the grid of
bench/facet_similar.py. The shipped service does the same (services/similar.py, services/facets.py);
the bench's ``report`` step checks the two agree by running the service itself.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from bench.facet_lists import FACET_ROLES, Corpus, QueryLists, Sentences

F32 = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Overall:
    """The overall list: the first stage re-ranked over its ``depth`` best by weighted RRF (k) of its own
    order (weight 1), the candidates' max-sim order (``sentences``) and the keyword list (``keyword``)."""

    sentences: float = 0.0
    keyword: float = 0.0
    k: float = 60.0
    depth: int = 100
    direction: str = "both"  # query: mean over the query's sentences; candidate: over its; both: their mean
    # the first stage's keyword list (``PAPERFEED_SIMILAR_KEYWORD_WEIGHT``): fused with its own order by
    # RRF (``PAPERFEED_SIMILAR_RRF_K``) before the stage, so keyword candidates outside it can come in
    first_keyword: float = 0.0
    first_k: float = 5.0

    def __str__(self) -> str:
        first = f"first keyword {self.first_keyword:g}, " if self.first_keyword > 0 else ""
        return (
            f"{first}sentences {self.sentences:g} ({self.direction}), keyword {self.keyword:g}, k {self.k:g}, "
            f"depth {self.depth}"
        )


@dataclass(frozen=True)
class FacetChoice:
    """A facet list: the overall list's ``depth`` best re-ranked by weighted RRF (k) of the overall order
    (weight 1) and the facet match's order (``match``), plus the facet sentences' keyword list
    (``keyword``)."""

    match: float = 1.0
    keyword: float = 0.0
    k: float = 60.0
    depth: int = 30
    floor: float = 1.0  # least weight of a candidate's sentence of another role (1: role-blind)
    mode: str = "rerank"  # rerank: the overall order vs the facet match's; lean: the overall list with
    # the query's facet sentences weighing ``match`` times the others in its sentence match

    def __str__(self) -> str:
        if self.mode == "lean":
            return f"lean: facet sentences ×{self.match:g}"
        kw = f", keyword {self.keyword:g}" if self.keyword else ""
        return f"match {self.match:g}{kw}, k {self.k:g}, depth {self.depth}, floor {self.floor:g}"


def meanmax(query: F32, candidate: F32) -> float:
    """Mean over the query's sentences of each one's best cosine among the candidate's sentences."""
    return float((query @ candidate.T).max(axis=1).mean())


def role_weights(s: Sentences, facet: str, floor: float) -> list[float]:
    """As the service weighs a candidate's sentences (domain.sentences.role_weights): the probability of
    the facet's roles, never below ``floor`` (hard roles where no probabilities were kept)."""
    from paperfeed.domain.sentences import ROLES

    wanted = FACET_ROLES[facet]
    if not s.probabilities:
        return [1.0 if r in wanted else floor for r in s.roles]
    at = [ROLES.index(r) for r in wanted]
    return [max(floor, sum(p[i] for i in at)) for p in s.probabilities]


def facet_rows(s: Sentences, facet: str) -> list[int]:
    if facet == "overall":
        return list(range(len(s.roles)))
    roles = FACET_ROLES[facet]
    return [i for i, r in enumerate(s.roles) if r in roles]


def rrf(orders: Sequence[tuple[Sequence[str], float]], k: float) -> list[str]:
    """Weighted RRF of best-first id lists; ties by first appearance in the first list."""
    score: dict[str, float] = {}
    first: dict[str, int] = {}
    for n, (order, weight) in enumerate(orders):
        for rank, pid in enumerate(order, 1):
            if n == 0:
                first.setdefault(pid, rank)
            if weight > 0:
                score[pid] = score.get(pid, 0.0) + weight / (k + rank)
            else:
                score.setdefault(pid, 0.0)
    return sorted(score, key=lambda p: (-score[p], first.get(p, 10**9), p))


@dataclass
class Matches:
    """A query's max-sim with each candidate that has sentences: over all its sentences (``overall``)
    and over those of each facet; computed once, read by every setting."""

    overall: dict[str, float]  # mean over the query's sentences of their best match in the candidate
    facets: dict[str, dict[str, float]]
    reverse: dict[str, float] | None = None  # mean over the candidate's sentences of their best match
    pool: list[str] | None = None
    best: F32 | None = None  # (query sentences, pool): each query sentence's best cosine in each candidate
    rows: dict[str, list[int]] | None = None  # the query's sentences of each facet

    def leaning(self, facet: str, weight: float, direction: str) -> dict[str, float]:
        """The overall match with the query's sentences of ``facet`` weighing ``weight`` (1: overall)."""
        if self.best is None or self.pool is None or self.rows is None or not self.rows.get(facet):
            return {}
        w = np.ones(self.best.shape[0], dtype=np.float32)
        w[self.rows[facet]] = weight
        forward = (w[:, None] * self.best).sum(axis=0) / w.sum()
        out = dict(zip(self.pool, forward.tolist(), strict=True))
        if direction == "both" and self.reverse is not None:
            return {pid: 0.5 * (x + self.reverse[pid]) for pid, x in out.items()}
        return out

    def of(self, direction: str) -> dict[str, float]:
        if direction == "query" or self.reverse is None:
            return self.overall
        if direction == "candidate":
            return self.reverse
        return {pid: 0.5 * (x + self.reverse[pid]) for pid, x in self.overall.items()}


def matches(c: Corpus, ql: QueryLists, floor: float = 1.0) -> Matches:
    """``floor`` < 1: in the facets' matches a candidate's sentence of another role counts that much."""
    own = c.sentences.get(ql.query)
    pool = list(dict.fromkeys([pid for pid, _, _ in ql.first] + ql.keyword))
    pool = [pid for pid in pool if pid in c.sentences and pid != ql.query]
    if own is None or not pool:
        return Matches({}, {})
    sizes = [len(c.sentences[pid].roles) for pid in pool]
    stacked = np.vstack([c.sentences[pid].vectors for pid in pool])
    sims = own.vectors @ stacked.T  # (query sentences, all candidate sentences)
    bounds = np.cumsum([0, *sizes])
    best = np.stack([sims[:, a:b].max(axis=1) for a, b in itertools.pairwise(bounds)], axis=1)
    overall = dict(zip(pool, best.mean(axis=0).tolist(), strict=True))
    back = [float(sims[:, a:b].max(axis=0).mean()) for a, b in itertools.pairwise(bounds)]
    reverse = dict(zip(pool, back, strict=True))
    facets: dict[str, dict[str, float]] = {}
    rows_of: dict[str, list[int]] = {}
    for facet in FACET_ROLES:
        rows = facet_rows(own, facet)
        rows_of[facet] = rows
        if not rows:
            continue
        if floor >= 1:
            facets[facet] = dict(zip(pool, best[rows].mean(axis=0).tolist(), strict=True))
            continue
        weights = np.asarray(
            [w for pid in pool for w in role_weights(c.sentences[pid], facet, floor)], dtype=np.float32
        )
        weighted = sims[rows] * weights[None, :]
        found = [float(weighted[:, a:b].max(axis=1).mean()) for a, b in itertools.pairwise(bounds)]
        facets[facet] = dict(zip(pool, found, strict=True))
    return Matches(overall, facets, reverse, pool, best, rows_of)


def by_match(scores: dict[str, float], ids: Sequence[str]) -> list[str]:
    """``ids`` that have a match score, best first (ties in the order of ``ids``)."""
    have = [pid for pid in ids if pid in scores]
    return sorted(have, key=lambda p: -scores[p])


def overall_list(ql: QueryLists, m: Matches, o: Overall) -> list[str]:
    first = [pid for pid, _, _ in ql.first]
    if o.first_keyword > 0:
        first = rrf([(first, 1.0), (ql.keyword, o.first_keyword)], o.first_k)
    if (o.sentences <= 0 or not m.overall) and o.keyword <= 0:
        return first
    head = first[: o.depth]
    inside = set(head)
    orders: list[tuple[Sequence[str], float]] = [(head, 1.0)]
    if o.sentences > 0 and m.overall:
        orders.append((by_match(m.of(o.direction), head), o.sentences))
    if o.keyword > 0:
        orders.append(([pid for pid in ql.keyword if pid in inside], o.keyword))
    ranked = rrf(orders, o.k)
    seen = set(ranked)
    return ranked + [pid for pid in first if pid not in seen]


def facet_list(
    ql: QueryLists,
    m: Matches,
    overall: list[str],
    facet: str,
    f: FacetChoice,
    o: Overall | None = None,
) -> list[str] | None:
    """The facet list over ``overall`` (the overall list, made with ``o``), or None when the query has no
    sentence of the facet (the service then shows the overall list)."""
    scores = m.facets.get(facet)
    if not scores:
        return None
    if f.mode == "lean":
        o = o or Overall()
        leaning = Matches(m.leaning(facet, f.match, o.direction), {})
        return overall_list(ql, leaning, replace(o, direction="query", sentences=o.sentences or 1.0))
    head = overall[: f.depth]
    orders: list[tuple[Sequence[str], float]] = [(head, 1.0), (by_match(scores, head), f.match)]
    if f.keyword > 0:
        inside = set(head)
        orders.append(([pid for pid in ql.facet_keyword.get(facet, []) if pid in inside], f.keyword))
    ranked = rrf(orders, f.k)
    seen = set(ranked)
    return ranked + [pid for pid in overall if pid not in seen]
