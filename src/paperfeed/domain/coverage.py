"""How much of the store meaning (semantic) search covers, and what is being done about the rest.

The sentence shown beside search results says what is true (issue #30, item 12): how many papers have no
vector yet, and whether an indexer is embedding them (at what rate, how long it will take) or none runs,
in which case it names the command that starts one. "Still being indexed" when nothing indexes was wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from paperfeed.domain.indexing_status import IndexerReport

__all__ = ["PaperCount", "SearchCoverage", "describe_duration"]


@dataclass(frozen=True, slots=True)
class SearchCoverage:
    """``indexed`` papers are in the vector index, of ``papers`` in the store."""

    indexed: int
    papers: int

    @property
    def building(self) -> bool:
        """True while some papers are not searchable by meaning yet."""
        return 0 <= self.indexed < self.papers

    @property
    def missing(self) -> int:
        return max(0, self.papers - self.indexed)

    def note(self, activity: IndexerReport | None = None) -> str | None:
        """What a search page, the API and the CLI say about it, or None when meaning search covers every
        paper. ``activity``: the newest report of an indexer that is running (None: none is)."""
        if not self.building:
            return None
        if self.indexed == 0:
            covered = f"Meaning search covers none of the {self.papers:,} papers yet"
        else:
            covered = f"Meaning search covers {self.indexed:,} of {self.papers:,} papers"
        if activity is None:
            return (
                f"{covered}: {self.missing:,} have no vector and no indexer is running, so results are "
                "keyword matches for those. An administrator starts one with `paperfeed index` (or runs "
                "the service with `paperfeed run`, which keeps one going)."
            )
        if activity.state == "idle":
            return (
                f"{covered}: the indexer will embed the {self.missing:,} new ones at its next look; until "
                "then, results for those are keyword matches."
            )
        return (
            f"{covered}: the indexer is {_pace(activity, self.missing)}; until then, results for the "
            f"{self.missing:,} others are keyword matches."
        )


def _pace(report: IndexerReport, missing: int) -> str:
    """``embedding at 9.3 papers/s, about 16 min left`` (or without a rate before its first batch)."""
    if not report.rate:
        return "embedding them"
    return f"embedding at {report.rate:,.1f} papers/s, about {describe_duration(missing / report.rate)} left"


def describe_duration(seconds: float) -> str:
    """``40 s``, ``16 min``, ``3 h 20 min``, ``2 days``: a remaining time as a person would say it."""
    if seconds < 60:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{round(hours / 24)} days"


class PaperCount(Protocol):
    """How many papers the store holds (the embedding store; on SQLite, the stdlib reader)."""

    def count_papers(self) -> int: ...
