"""Trending by citations (issue #16, the opt-in ``sort=cited``): citation velocity, for older papers.

The upvote trending list (:func:`~paperfeed.domain.feed.trending_score`) only sees the last 30 days; a
paper that keeps being cited a year or five after it appeared never shows there. ``sort=cited`` ranks
every paper of the store that was cited in the last twelve months by how fast citations arrive now::

    velocity = citations_last_12_months / clamp(months_since_publication, 3, 12)

* **citations_last_12_months**: citing works dated within 365 days of the reference day (the store's
  :class:`~paperfeed.domain.paper_graph.LinkCounts`; a citing work without a date is not counted).
* the divisor is the part of the last year the paper has existed, in months (30.44 days): a paper a
  year old or more divides by 12, so velocity is its citations per month over the last year; a younger
  one by its age, so its rate is not diluted by months before it existed. **At least 3**: two citations
  in a paper's first week would otherwise read as a rate no established paper reaches. A paper without
  a publication date counts as old (12).

Ties break by total citations, then paper id. The formula text with its parameters is
:meth:`CitedParams.formula`, shown on the page and in the API docs (docs/citations.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Protocol

from .models import Paper

__all__ = [
    "CITED_FORMULA",
    "CitedCandidate",
    "CitedItem",
    "CitedPage",
    "CitedParams",
    "CitedQueries",
    "citation_velocity",
    "months_between",
]

CITED_FORMULA = "velocity = citations_last_12_months / clamp(months_since_publication, m, 12)"
DAYS_PER_MONTH = 365.25 / 12


@dataclass(frozen=True, slots=True)
class CitedParams:
    """Parameters of :func:`citation_velocity`."""

    min_months: float = 3.0  # the youngest age a rate is measured over
    max_months: float = 12.0  # the window the recent citations are counted in

    def formula(self) -> str:
        return f"{CITED_FORMULA}, m = {self.min_months:g}"


def months_between(published: date | None, as_of: date) -> float | None:
    """Months (of 30.44 days) from ``published`` to ``as_of``; ``None`` when undated."""
    if published is None:
        return None
    return max((as_of - published).days, 0) / DAYS_PER_MONTH


def citation_velocity(recent: int, published: date | None, as_of: date, params: CitedParams) -> float:
    """The module's formula: recent citations per month of the last year the paper has existed."""
    months = months_between(published, as_of)
    divisor = params.max_months if months is None else min(max(months, params.min_months), params.max_months)
    return max(recent, 0) / divisor


@dataclass(frozen=True, slots=True)
class CitedCandidate:
    """A paper of the store cited within the last twelve months, with its counts."""

    paper: Paper
    citations: int  # all citations known (edges stored, or the source's total if higher)
    citations_last_12_months: int


@dataclass(frozen=True, slots=True)
class CitedItem:
    rank: int  # 1-based
    paper: Paper
    velocity: float
    citations: int
    citations_last_12_months: int
    months: float | None  # age in months at the reference day (None: undated)


@dataclass(frozen=True, slots=True)
class CitedPage:
    items: tuple[CitedItem, ...]
    total: int  # papers with a citation in the last twelve months
    offset: int
    limit: int
    as_of: date  # the reference day
    formula: str


class CitedQueries(Protocol):
    """The store's side of ``sort=cited`` (implemented in ``adapters/store``)."""

    def cited_candidates(self, as_of: date) -> list[CitedCandidate]:
        """Papers of the store (hidden ones excluded) with at least one citing work dated in the 365
        days up to ``as_of``."""
        ...
