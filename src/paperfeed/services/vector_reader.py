"""The stored vector index as the readers of one process see it: opened once it exists, and kept current.

Search, similar papers, the coverage notice and "For you" read the index another process writes
(``paperfeed index --follow`` beside the web server, or a one-off ``paperfeed index``). Loading it once
and keeping it is wrong in both directions: an index that did not exist yet must be looked for again,
and one that was loaded (even empty) must be swapped for the generation saved since. Both checks happen
here, at most once per ``every`` seconds, on use: a ``stat`` of the folder index's manifest, one small
query on pgvector. Issue #30 item 1 was a reader that returned early on an empty index and so never
asked whether a fuller one had been saved.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from paperfeed.domain.search import VectorIndex, VectorIndexError

if TYPE_CHECKING:
    from paperfeed.services.embedders import Embedders

__all__ = ["FixedVectors", "SearchVectors", "VectorReader"]

log = logging.getLogger(__name__)


@dataclass
class VectorReader:
    """``open`` finds and opens the stored index (None: nothing saved yet; it may raise
    :class:`VectorIndexError` for a damaged one, which the caller reports). Calling the reader returns
    the index, reloaded when another process saved a newer generation."""

    open: Callable[[], VectorIndex | None]
    every: float  # PAPERFEED_VECTOR_RELOAD_SECONDS
    clock: Callable[[], float] = time.monotonic
    _index: VectorIndex | None = field(default=None, init=False)
    _error: VectorIndexError | None = field(default=None, init=False)  # the last open's, until the next
    _checked: float = field(default=-math.inf, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __call__(self) -> VectorIndex | None:
        now = self.clock()
        with self._lock:
            index = self._index
            due = now - self._checked >= self.every
            if due:
                self._checked = now
        if index is None:
            if not due:
                if self._error is not None:
                    raise self._error
                return None
            try:
                index = self.open()
            except VectorIndexError as exc:
                self._error = exc
                raise
            self._error = None
            if index is None:
                return None
            with self._lock:
                if self._index is None:
                    self._index = index
                    return index
                index = self._index
        if due:
            try:
                index.reload_if_changed()
            except VectorIndexError as exc:
                log.warning("could not reload the vector index, keeping the loaded one: %s", exc)
        return index

    def refresh(self) -> VectorIndex | None:
        """Look for a newer saved index now, whatever the interval (the page version says one was saved)."""
        with self._lock:
            self._checked = -math.inf
        return self()

    @property
    def loaded(self) -> VectorIndex | None:
        """The index as last opened, without looking for a newer one (None: not opened yet)."""
        return self._index


class VectorOpener(Protocol):
    """Finds and opens the stored vector index of a model for reading (None: nothing saved yet)."""

    def open_for_reading(self, model_id: str) -> VectorIndex | None: ...


@dataclass
class SearchVectors:
    """:class:`~paperfeed.domain.search.VectorSource` of a process: the stored index of the embedder's
    model through a :class:`VectorReader`, made afresh when another model is adopted (search, similar
    papers, "For you", the coverage notice and /admin/jobs read it)."""

    embedders: Embedders
    opener: VectorOpener
    every: float  # PAPERFEED_VECTOR_RELOAD_SECONDS
    _reader: VectorReader | None = field(default=None, init=False)
    _generation: int = field(default=-1, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def _current_reader(self) -> VectorReader:
        self.embedders.follow()
        with self._lock:
            if self._reader is None or self._generation != self.embedders.generation:
                self._reader = VectorReader(self._open, every=self.every)
                self._generation = self.embedders.generation
            return self._reader

    def _open(self) -> VectorIndex | None:
        return self.opener.open_for_reading(self.embedders.current().model_id)

    def current(self) -> VectorIndex | None:
        """The index, found once it exists and reloaded when a newer generation was saved."""
        return self._current_reader()()

    def count(self) -> int | None:
        """Papers in the index (0 before anything is embedded); None when it cannot be read."""
        try:
            index = self.current()
        except Exception as exc:  # a notice must never take a page down; search itself says what failed
            log.warning("cannot count the vector index: %s", exc)
            return None
        return 0 if index is None else len(index)

    def refresh(self) -> None:
        """Look for a newer saved index now (the page version says one was saved), if one was read."""
        with self._lock:
            reader = self._reader
        if reader is None:
            return
        try:
            reader.refresh()
        except Exception as exc:  # search itself says what is wrong with its index; a page must render
            log.warning("could not reload the vector index: %s", exc)


@dataclass(frozen=True)
class FixedVectors:
    """A :class:`~paperfeed.domain.search.VectorSource` over one index (tests, benches; None: none)."""

    index: VectorIndex | None

    def current(self) -> VectorIndex | None:
        return self.index

    def count(self) -> int | None:
        return 0 if self.index is None else len(self.index)
