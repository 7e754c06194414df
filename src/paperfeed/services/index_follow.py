"""A web node's derived indexes follow a shared PostgreSQL store: a background look every few seconds.

On SQLite every process of a deployment shares one data folder, so whoever writes the store also updates
the derived indexes there. On PostgreSQL each node may keep its own tantivy and faiss indexes on local
disk (``PAPERFEED_KEYWORD_ENGINE=tantivy``, ``PAPERFEED_VECTOR_INDEX=local``): writes made through another
node never reach them, so each web process runs this follower. Each look is cheap when nothing changed
(an indexed ``count``/``max`` over the keyword watermark's overlap window, one primary-key read for the
vectors' change signal) and adds only what is new when something did; the first look is the node's cold
start (a full build from the store when an index is missing or damaged), done before the node serves.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from paperfeed.domain.wording import count
from paperfeed.services.indexing import IndexSync

__all__ = ["FollowLook", "IndexFollower"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FollowLook:
    """What one look did: papers (re-)indexed by keyword, the vector sync (None: nothing new), seconds."""

    keyword: int | None
    vectors: IndexSync | None
    seconds: float


class IndexFollower:
    """Runs ``keyword`` and ``vectors`` (each optional) once now, then every ``every`` seconds on a
    daemon thread until :meth:`close`. A failing look is logged and retried at the next one: a web node
    keeps serving from the index it has (the database may be restarting)."""

    def __init__(
        self,
        *,
        keyword: Callable[[], int] | None,
        vectors: Callable[[], IndexSync | None] | None,
        every: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._keyword = keyword
        self._vectors = vectors
        self.every = every
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def look(self) -> FollowLook:
        """One look: catch the indexes up with the store."""
        started = self._clock()
        keyword = self._keyword() if self._keyword is not None else None
        vectors = self._vectors() if self._vectors is not None else None
        return FollowLook(keyword, vectors, self._clock() - started)

    def start(self) -> FollowLook:
        """The cold start (first look, in the caller's thread, timed and logged), then the thread."""
        first = self.look()
        vectors = "" if first.vectors is None else f", vectors {first.vectors.mode} ({first.vectors.size:,})"
        log.info(
            "node indexes follow the store every %g s; ready in %.1f s (keyword: %s indexed%s)",
            self.every,
            first.seconds,
            "-" if first.keyword is None else count(first.keyword, "paper"),
            vectors,
        )
        if self.every > 0:
            self._thread = threading.Thread(target=self._run, name="index-follower", daemon=True)
            self._thread.start()
        return first

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                found = self.look()
            except Exception as exc:  # keep serving; the next look retries
                log.warning("index follower: %s", exc)
                continue
            if found.keyword or found.vectors is not None:
                log.info(
                    "index follower: %s, vectors %s, %.2f s",
                    count(found.keyword or 0, "paper"),
                    found.vectors,
                    found.seconds,
                )

    def close(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=30)
