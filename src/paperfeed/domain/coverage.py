"""How much of the store meaning (semantic) search covers, and what is being done about the rest.

The sentence shown beside search results says what is true (issue #30, item 12): how many papers have no
vector yet, and whether an indexer is embedding them (at what rate, how long it will take) or none runs,
in which case it names the command that starts one. "Still being indexed" when nothing indexes was wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from paperfeed.domain.indexing_status import IndexerReport, describe_duration, pace
from paperfeed.domain.wording import agree, count

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

    def note(self, activity: IndexerReport | None = None, now: datetime | None = None) -> str | None:
        """What a search page, the API and the CLI say about it, or None when meaning search covers every
        paper. ``activity``: the newest report of an indexer that is running (None: none is), as of
        ``now`` (default: the report's own time)."""
        if not self.building:
            return None
        if self.indexed == 0:
            covered = f"Meaning search covers none of the {count(self.papers, 'paper')} yet"
        else:
            covered = f"Meaning search covers {self.indexed:,} of {count(self.papers, 'paper')}"
        if activity is None:
            return (
                f"{covered}: {self.missing:,} {agree(self.missing, 'has', 'have')} no vector and no indexer "
                "is running, so results are keyword matches for those. An administrator starts one with "
                "`paperfeed index` (or runs the service with `paperfeed run`, which keeps one going)."
            )
        when = now if now is not None else activity.at
        if activity.state == "idle":
            return (
                f"{covered}: the indexer will embed the {count(self.missing, 'new one')} at its next look; "
                "until then, results for those are keyword matches."
            )
        if activity.state == "embedding":
            doing = f"embedding{pace(activity, when) or ' them'}"
        elif activity.state == "sentences":
            doing = (
                f"making the papers' sentences{pace(activity, when)}, and embeds the "
                f"{count(self.missing, 'new one')} next (the sentences yield to them)"
            )
        else:
            doing = f"updating the topics, and embeds the {count(self.missing, 'new one')} next"
        others = count(self.missing, "other")
        return f"{covered}: the indexer is {doing}; until then, results for the {others} are keyword matches."


class PaperCount(Protocol):
    """How many papers the store holds (the embedding store; on SQLite, the stdlib reader)."""

    def count_papers(self) -> int: ...
