"""The port of the page cache the web workers of one node share (the adapter is ``adapters/page_cache.py``).

Each web worker keeps rendered anonymous answers in its own memory; with several workers, every popular
page would be rendered once per worker. A :class:`SharedPageCache` lets one worker's render serve the
others: opaque bytes under a string key, kept for a number of seconds, bounded in size.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["SharedPageCache"]


class SharedPageCache(Protocol):
    """Bytes shared by the processes of one node; a lost or unreadable entry is a miss, never an error."""

    def get(self, key: str) -> bytes | None:
        """The bytes stored under ``key`` and not yet expired, else None."""
        ...

    def put(self, key: str, value: bytes, seconds: float) -> None:
        """Keep ``value`` under ``key`` for ``seconds`` (may drop older entries to stay within its size)."""
        ...

    def close(self) -> None: ...
