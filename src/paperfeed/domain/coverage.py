"""How much of the store meaning (semantic) search covers while the background indexer catches up."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SearchCoverage"]


@dataclass(frozen=True, slots=True)
class SearchCoverage:
    """``indexed`` papers are in the vector index, of ``papers`` in the store."""

    indexed: int
    papers: int

    @property
    def building(self) -> bool:
        """True while some papers are not searchable by meaning yet."""
        return 0 <= self.indexed < self.papers

    def note(self) -> str | None:
        """What a search page and the API say about it, or None when meaning search covers everything."""
        if not self.building:
            return None
        if self.indexed == 0:
            return (
                f"Meaning search covers none of the {self.papers:,} papers yet: they are still being "
                "indexed, so results are keyword matches for now."
            )
        return (
            f"Meaning search covers {self.indexed:,} of {self.papers:,} papers; "
            "the rest are still being indexed."
        )
