"""Related work around one paper, ranked and explained from the citation graph (issue #16).

The store counts overlaps (:class:`~paperfeed.domain.paper_graph.RelatedCounts`); this module turns them
into three short lists in the Connected Papers sense, each entry saying why it is there with the numbers
behind it, so a reader can judge it (no offline test set can; see docs/citations.md, "Reading the graph"):

* **Prior works**: works co-cited (by some third paper) with the most of this paper's references,
  ``score = prior[w]`` — "co-cited with 12 of this paper's references". Works known to be later than the
  paper (they cite it, or were published after it) are left out.
* **Derivative works**: later works that cite the paper and/or many of its references,
  ``score = coupling[w] + [w cites the paper]`` — "cites it and 7 of its references". A work that does not
  cite the paper needs at least :attr:`RelatedRules.min_shared` shared references.
* **Shared references** (bibliographic coupling): the remaining works that share references with it,
  ``score = coupling[w]`` — "shares 9 references".

A work appears in one list only (derivative before coupling before prior), and never the paper itself.
Ties break on the number of papers citing both (co-citation), then the newer work, then the key, so the
order is stable.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from enum import Enum

from .paper_graph import RelatedCounts, WorkRef

__all__ = [
    "RelatedEntry",
    "RelatedKind",
    "RelatedRules",
    "RelatedWork",
    "UnknownPaper",
    "rank_related",
]


class UnknownPaper(LookupError):
    """The paper asked about is not in this instance (surfaces answer 404)."""

    def __init__(self, paper_id: str) -> None:
        super().__init__(f"paper {paper_id} is not in this paperfeed instance")
        self.paper_id = paper_id


class RelatedKind(Enum):
    PRIOR = "prior"
    DERIVATIVE = "derivative"
    COUPLING = "coupling"


@dataclass(frozen=True, slots=True)
class RelatedRules:
    """How many entries each list keeps, and the least overlap that counts."""

    per_list: int = 10
    min_shared: int = 2  # shared references for a derivative that does not cite the paper, or a coupling
    min_prior: int = 2  # references a prior work must be co-cited with


@dataclass(frozen=True, slots=True)
class RelatedEntry:
    """One related work, its reason in words and the numbers the reason is made of."""

    key: str
    kind: RelatedKind
    work: WorkRef
    in_store: bool
    score: int
    reason: str
    shared_references: int  # references the work shares with the paper (it cites them too)
    co_cited_with_references: int  # of the paper's references the work is co-cited with
    co_citations: int  # papers citing both the work and the paper
    cites_paper: bool


@dataclass(frozen=True, slots=True)
class RelatedWork:
    prior: tuple[RelatedEntry, ...] = ()
    derivative: tuple[RelatedEntry, ...] = ()
    coupling: tuple[RelatedEntry, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.prior or self.derivative or self.coupling)

    def all(self) -> tuple[RelatedEntry, ...]:
        return self.prior + self.derivative + self.coupling


def _n(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _reason(kind: RelatedKind, shared: int, prior: int, co_cited: int, cites: bool) -> str:
    if kind is RelatedKind.PRIOR:
        text = f"co-cited with {prior} of this paper's references"
    elif kind is RelatedKind.DERIVATIVE:
        if cites and shared:
            text = f"cites it and {shared} of its references"
        elif cites:
            text = "cites it"
        else:
            text = f"cites {shared} of its references"
    else:
        text = f"shares {_n(shared, 'reference', 'references')}"
    if co_cited:
        text += f"; cited together with it by {_n(co_cited, 'paper', 'papers')}"
    return text


def _when(work: WorkRef) -> date | None:
    if work.published is not None:
        return work.published
    return date(work.year, 1, 1) if work.year else None


def _later(work: WorkRef, published: date | None) -> bool:
    """Known to come after a paper published on ``published`` (a year alone must be a later year)."""
    if published is None:
        return False
    if work.published is not None:
        return work.published > published
    return work.year is not None and work.year > published.year


def _newest_first(work: WorkRef) -> tuple[int, str]:
    when = _when(work)
    return (-(when.toordinal() if when else 0), work.key)


def rank_related(
    key: str,
    counts: RelatedCounts,
    *,
    published: date | None = None,
    rules: RelatedRules | None = None,
) -> RelatedWork:
    """Rank and explain the related work of the paper keyed ``key`` (published on ``published``)."""
    rules = rules or RelatedRules()
    candidates = (set(counts.coupling) | set(counts.prior) | set(counts.cites_paper)) - {key}

    def entry(k: str, kind: RelatedKind, score: int) -> RelatedEntry:
        shared = counts.coupling.get(k, 0)
        prior = counts.prior.get(k, 0)
        co_cited = counts.co_citation.get(k, 0)
        cites = k in counts.cites_paper
        return RelatedEntry(
            key=k,
            kind=kind,
            work=counts.works.get(k) or WorkRef(key=k),
            in_store=k in counts.in_store,
            score=score,
            reason=_reason(kind, shared, prior, co_cited, cites),
            shared_references=shared,
            co_cited_with_references=prior,
            co_citations=co_cited,
            cites_paper=cites,
        )

    chosen: dict[RelatedKind, list[RelatedEntry]] = {kind: [] for kind in RelatedKind}
    for k in candidates:
        work = counts.works.get(k) or WorkRef(key=k)
        shared = counts.coupling.get(k, 0)
        cites = k in counts.cites_paper
        later = cites or _later(work, published)
        if later and (cites or shared >= rules.min_shared):
            chosen[RelatedKind.DERIVATIVE].append(entry(k, RelatedKind.DERIVATIVE, shared + int(cites)))
        elif not later and shared >= rules.min_shared:
            chosen[RelatedKind.COUPLING].append(entry(k, RelatedKind.COUPLING, shared))
        elif not later and counts.prior.get(k, 0) >= rules.min_prior:
            chosen[RelatedKind.PRIOR].append(entry(k, RelatedKind.PRIOR, counts.prior[k]))

    def ranked(entries: list[RelatedEntry]) -> tuple[RelatedEntry, ...]:
        entries.sort(key=lambda e: (-e.score, -e.co_citations, *_newest_first(e.work)))
        return tuple(entries[: rules.per_list])

    return RelatedWork(
        prior=ranked(chosen[RelatedKind.PRIOR]),
        derivative=ranked(chosen[RelatedKind.DERIVATIVE]),
        coupling=ranked(chosen[RelatedKind.COUPLING]),
    )
