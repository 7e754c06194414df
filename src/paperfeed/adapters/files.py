"""File-system steps the adapters that publish files (backups, vector indexes, models) share."""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

__all__ = ["fingerprint", "fsync"]


def fsync(path: Path) -> None:
    """Flush a file, or a folder's entries, to disk: what makes a following rename durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fingerprint(paths: tuple[Path, ...]) -> str:
    """A short digest of the files' bytes (a missing or unreadable file counts as empty): it changes
    exactly when one of these small state files is rewritten with other contents."""
    digest = hashlib.blake2b(digest_size=8)
    for path in paths:
        with contextlib.suppress(OSError):
            digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()
