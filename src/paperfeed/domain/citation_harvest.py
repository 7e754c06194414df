"""Which papers a citation harvest asks about, and what it reports (issue #16; the service is
``services/citations.py``).

A paper is *due* from a source when it was never harvested from it, or its last harvest there is older
than the mode's age: 30 days for a plain harvest (a rerun skips what was just fetched, which is also how
a killed harvest resumes: the batches it saved are fresh), 7 days for a refresh, which re-asks the
papers published in the last 90 days, whose cited-by lists still grow fast.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Protocol

from .ids import InvalidPaperId, parse_arxiv_id

__all__ = [
    "HarvestPlan",
    "HarvestReport",
    "HarvestSettings",
    "PublishedPapers",
    "arxiv_only",
    "due",
]


class PublishedPapers(Protocol):
    """The store's papers by publication date (implemented in ``adapters/store/citation_candidates.py``)."""

    def published_since(self, since: date) -> list[str]:
        """Ids of the papers published on or after ``since``, oldest first."""
        ...


@dataclass(frozen=True, slots=True)
class HarvestSettings:
    """The citation harvest's knobs; all but ``fresh_for`` are ``PAPERFEED_CITATIONS_*`` settings."""

    batch_size: int  # papers per saved batch: a kill loses at most this many papers' answers
    max_citations: int  # cited-by entries fetched per paper (the source's total is kept anyway)
    refresh_after: timedelta  # a refresh re-asks papers harvested longer ago
    refresh_window: timedelta  # a refresh covers papers published this recently
    daily_max: int  # papers per source and daily run (S2 at 1 request/s: ~3 requests a paper)
    fresh_for: timedelta = timedelta(days=30)  # a plain harvest skips papers harvested more recently


@dataclass(frozen=True, slots=True)
class HarvestPlan:
    source: str
    due: tuple[str, ...]
    skipped: int  # harvested recently enough from this source


@dataclass(slots=True)
class HarvestReport:
    """What one source's harvest did. ``error`` is set when it stopped early (``offline``: before it
    changed anything); the papers saved before that stay saved, and a rerun goes on from there."""

    source: str
    planned: int = 0
    skipped: int = 0
    papers: int = 0  # answered and saved (known or not)
    unknown: int = 0  # the source does not know them (recorded, so not asked again for a while)
    edges_added: int = 0
    works_added: int = 0
    unkeyed: int = 0  # list entries without a usable id: not stored
    cut: int = 0  # papers whose cited-by list was cut at max_citations
    resumed: bool = False  # an interrupted harvest of this source was found and continued
    error: str | None = None
    unreachable: bool = False  # the error is SourceUnavailable (offline, timeouts, 429/5xx storms)
    offline: bool = False  # unreachable before anything was saved: the run changed nothing

    @property
    def stopped(self) -> bool:
        return self.error is not None


def arxiv_only(paper_ids: Sequence[str]) -> tuple[list[str], list[str]]:
    """(canonical arXiv ids, in order and without repeats; the ids that are not arXiv ids)."""
    good: dict[str, None] = {}
    bad: list[str] = []
    for raw in paper_ids:
        try:
            good[parse_arxiv_id(raw).base] = None
        except InvalidPaperId:
            bad.append(raw)
    return list(good), bad


def due(
    paper_ids: Sequence[str], harvested: Mapping[str, datetime], *, now: datetime, max_age: timedelta
) -> list[str]:
    """The papers never harvested (in the given order), then those harvested before ``now - max_age``,
    longest ago first: a capped run (the daily job's) serves new papers before refreshing old ones."""
    cutoff = now - max_age
    never = [p for p in paper_ids if p not in harvested]
    stale = sorted((at, p) for p in paper_ids if (at := harvested.get(p)) is not None and at < cutoff)
    return never + [p for _at, p in stale]
