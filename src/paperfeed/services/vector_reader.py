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

from paperfeed.domain.search import VectorIndex, VectorIndexError

__all__ = ["VectorReader"]

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
