"""The counts behind "meaning search covers n of m papers", cached so a search page pays nothing for them.

Counting the papers is a full count on the store, so it is taken at most once per ``ttl`` seconds (or
afresh after an import, :meth:`CoverageService.forget`). The vector index's size is read on every call:
the index is kept current by its reader, and the notice must go away within seconds of the indexer
finishing, not half a minute later. What the indexer is doing comes from ``indexer``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from paperfeed.domain.coverage import PaperCount, SearchCoverage
from paperfeed.domain.indexing_status import IndexerWatch
from paperfeed.domain.search import VectorSource

__all__ = ["CoverageService"]


@dataclass
class CoverageService:
    """``papers`` counts the store's papers, ``vectors`` the vector index's (None: it cannot be read,
    and the search itself says so); ``indexer`` says what the indexer is doing, if one runs."""

    papers: PaperCount
    vectors: VectorSource
    indexer: IndexerWatch
    ttl: float = 30.0
    clock: Callable[[], float] = time.monotonic
    _cached: tuple[float, int] | None = field(default=None, init=False)  # (when, papers)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def coverage(self) -> SearchCoverage | None:
        """The current counts (the papers' at most ``ttl`` seconds old), or None when the vector index is
        unreadable (the search itself says so)."""
        indexed = self.vectors.count()
        if indexed is None:
            return None
        now = self.clock()
        with self._lock:
            cached = self._cached
        if cached is None or now - cached[0] >= self.ttl:
            cached = (now, self.papers.count_papers())
            with self._lock:
                self._cached = cached
        return SearchCoverage(indexed, cached[1])

    def note(self) -> str | None:
        """The sentence to show next to search results, when meaning search does not cover every paper."""
        found = self.coverage()
        if found is None or not found.building:
            return None
        return found.note(self.indexer.activity(), datetime.now(UTC))

    def forget(self) -> None:
        """Count afresh next time (after an import added papers)."""
        with self._lock:
            self._cached = None
