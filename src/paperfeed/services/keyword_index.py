"""The keyword index as the maintenance commands see it: ``paperfeed index --keyword`` rebuilds it,
``paperfeed restore`` brings it up to date with the restored store."""

from __future__ import annotations

from dataclasses import dataclass

from paperfeed.domain.search import SyncedKeywordIndex

__all__ = ["KeywordIndexService"]


@dataclass(frozen=True)
class KeywordIndexService:
    index: SyncedKeywordIndex

    @property
    def engine(self) -> str:
        """Which engine it is (``tantivy``, ``fts5``, ``postgres``)."""
        return self.index.name

    def rebuild(self) -> int:
        """Index every paper from scratch; the papers indexed."""
        self.index.rebuild()
        return len(self.index)

    def catch_up(self) -> None:
        """Open the index (which builds it when missing, or catches up with the store) and wait until
        everything it took in is searchable."""
        self.index.flush()
