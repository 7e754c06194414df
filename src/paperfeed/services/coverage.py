"""The counts behind "meaning search covers n of m papers", cached so a search page pays nothing for them.

Counting the papers is a full count on the store and the vector index may have to be opened, so the
counts are taken at most once per ``ttl`` seconds (a background indexer moves them in rounds of
minutes, so a page a few seconds behind says nothing wrong).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from paperfeed.domain.coverage import SearchCoverage

__all__ = ["CoverageService"]


@dataclass
class CoverageService:
    """``papers`` counts the store's papers, ``indexed`` the vector index's (None: it cannot be read,
    and the search itself says so)."""

    papers: Callable[[], int]
    indexed: Callable[[], int | None]
    ttl: float = 30.0
    clock: Callable[[], float] = time.monotonic
    _cached: tuple[float, SearchCoverage | None] | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def coverage(self) -> SearchCoverage | None:
        """The current counts (at most ``ttl`` seconds old), or None when the vector index is unreadable."""
        now = self.clock()
        with self._lock:
            cached = self._cached
        if cached is not None and now - cached[0] < self.ttl:
            return cached[1]
        indexed = self.indexed()
        found = None if indexed is None else SearchCoverage(indexed, self.papers())
        with self._lock:
            self._cached = (now, found)
        return found

    def note(self) -> str | None:
        """The sentence to show next to search results, when meaning search does not cover every paper."""
        found = self.coverage()
        return None if found is None else found.note()

    def forget(self) -> None:
        """Count afresh next time (after an import added papers)."""
        with self._lock:
            self._cached = None
