"""One process per node does a node's background index work: a non-blocking ``flock`` on a file in the
data folder (released by the kernel when its holder exits, so a successor takes over)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

__all__ = ["NodeLock"]


class NodeLock:
    """Held by at most one process at a time; :meth:`held` tries to take it when not yet held."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def held(self) -> bool:
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
