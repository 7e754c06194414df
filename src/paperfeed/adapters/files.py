"""File-system steps the adapters that publish files (backups, vector indexes, models) share."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["fsync"]


def fsync(path: Path) -> None:
    """Flush a file, or a folder's entries, to disk: what makes a following rename durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
