"""The keyword index, opened on first use.

Opening the keyword index brings it up to date with the store, and builds it when it is missing, damaged
or of an older version (~35 s at 200k papers). The services that use it -- search, and the ingest
service that keeps it in step -- are built long before any of them needs it (a sign-in builds the
library, which holds the search), so the index is opened here, inside the adapter, the first time
something is asked of it: the service graph is built without waiting for it (issue #32).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import datetime

from paperfeed.domain.ingest import BatchResult, StagingIndex
from paperfeed.domain.models import Paper
from paperfeed.domain.search import ParsedQuery, ScoredId, SearchFilters, Span, SyncedKeywordIndex

__all__ = ["LazyKeywordIndex"]


class LazyKeywordIndex:
    """A :class:`~paperfeed.domain.search.SyncedKeywordIndex` that ``open`` makes on first use.

    It is also a :class:`~paperfeed.domain.ingest.StagingIndex`: an index that stages papers while the
    store writes them (tantivy) does so, one that does not (FTS5, PostgreSQL) does its work after the
    commit, as when it is given to the ingest service directly."""

    def __init__(self, open_index: Callable[[], SyncedKeywordIndex]) -> None:
        self._open_index = open_index
        self._index: SyncedKeywordIndex | None = None
        self._lock = threading.Lock()

    def opened(self) -> SyncedKeywordIndex:
        """The index itself, opened (and brought up to date) now if it was not yet."""
        index = self._index
        if index is None:
            with self._lock:
                if self._index is None:
                    self._index = self._open_index()
                index = self._index
        return index

    def open(self) -> None:
        """:class:`~paperfeed.domain.ingest.OpenedOnUse`: open (and catch up) now."""
        self.opened()

    @property
    def is_open(self) -> bool:
        return self._index is not None

    @property
    def name(self) -> str:
        return self.opened().name

    def __len__(self) -> int:
        return len(self.opened())

    def search(self, query: ParsedQuery, k: int) -> list[ScoredId]:
        return self.opened().search(query, k)

    def highlight(self, query: ParsedQuery, text: str) -> list[Span]:
        return self.opened().highlight(query, text)

    def more_like_this(
        self,
        title: str,
        abstract: str,
        k: int,
        filters: SearchFilters | None = None,
        *,
        max_terms: int = 25,
    ) -> list[ScoredId]:
        return self.opened().more_like_this(title, abstract, k, filters, max_terms=max_terms)

    def stage_papers(self, papers: Sequence[Paper], written_at: datetime) -> None:
        index = self.opened()
        if isinstance(index, StagingIndex):
            index.stage_papers(papers, written_at)

    def discard_staged(self) -> None:
        index = self._index
        if isinstance(index, StagingIndex):
            index.discard_staged()

    def on_papers_changed(self, changed: Sequence[str] | BatchResult) -> None:
        self.opened().on_papers_changed(changed)

    def flush(self) -> None:
        self.opened().flush()

    def rebuild(self) -> object:
        return self.opened().rebuild()

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
