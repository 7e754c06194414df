"""The web workers' shared page cache: a size-bounded SQLite file on the node's disk, by ``diskcache``.

``diskcache`` is made for exactly this (several processes, one file, eviction by size and expiry) and its
reads are a single indexed SQLite lookup served from the OS page cache. Values are stored as raw bytes
(never pickled: the middleware encodes its entries itself). Eviction is "least recently stored", so a
read never writes: with "least recently used" every hit would be a write and the workers would queue on
SQLite's lock.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import diskcache

__all__ = ["DiskPageCache"]

log = logging.getLogger(__name__)

# Every answer the middleware keeps (≤ 4 MiB) stays inside the SQLite file: no file per entry to write,
# fsync or unlink.
_INLINE_BYTES = 8 * 1024 * 1024


class DiskPageCache:
    """A :class:`~paperfeed.domain.page_cache.SharedPageCache` in ``directory``, at most ``max_bytes``."""

    def __init__(self, directory: Path, max_bytes: int) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self._cache = diskcache.Cache(
            str(directory),
            size_limit=max_bytes,
            eviction_policy="least-recently-stored",
            disk_min_file_size=_INLINE_BYTES,
            timeout=0.05,  # a worker never waits long on another's write: a lookup that times out is a miss
            statistics=False,
            tag_index=False,
        )

    def get(self, key: str) -> bytes | None:
        try:
            value = self._cache.get(key, default=None, retry=False)
        except (diskcache.Timeout, sqlite3.Error, OSError) as exc:
            log.debug("shared page cache: read of %s failed: %s", key, exc)
            return None
        return value if isinstance(value, bytes) else None

    def put(self, key: str, value: bytes, seconds: float) -> None:
        try:
            self._cache.set(key, value, expire=seconds, retry=False)
        except (diskcache.Timeout, sqlite3.Error, OSError) as exc:  # another worker holds the lock: skip it
            log.debug("shared page cache: write of %s failed: %s", key, exc)

    def close(self) -> None:
        self._cache.close()
