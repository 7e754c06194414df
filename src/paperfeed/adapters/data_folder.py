"""The data folder and the files in it that hold readers' data are the paperfeed user's alone.

``paperfeed.db`` (with its ``-wal``, ``-shm`` and ``-journal`` files) holds addresses, password hashes,
private notes and libraries; ``secret_key`` signs sessions' CSRF tokens and mailed links; the folder also
holds the outbox of mails not yet sent and the indexes. Under the usual umask (022) SQLite created the
database 0644 and ``mkdir`` the folder 0755, so any other account on the machine could read them. Now:

- the folder is made ``0700`` (an existing one that others can enter is tightened, with a log line);
- ``paperfeed.db`` is created ``0600`` before SQLite opens it (an empty file is an empty database), and
  SQLite gives its ``-wal``/``-shm``/``-journal`` files the database's own mode; existing ones that
  others can read are tightened (logged);
- :func:`private_file` opens a file ``0600`` for exports (``users export``, ``library export -o``) and
  backups, whatever the umask.

Modes are set explicitly (``chmod``) after creation, since a umask can only take permissions away.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from typing import BinaryIO

__all__ = ["DATABASE", "PRIVATE_FILES", "private_file", "secure_data_folder", "secure_folder"]

log = logging.getLogger(__name__)

DATABASE = "paperfeed.db"
PRIVATE_FILES = (DATABASE, f"{DATABASE}-wal", f"{DATABASE}-shm", f"{DATABASE}-journal", "secret_key")


def _open_to_others(path: Path) -> int | None:
    """The mode of ``path`` when group or others have any permission on it, else None (or missing)."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return None
    return mode if mode & 0o077 else None


def secure_folder(folder: Path) -> None:
    """``folder`` exists and is ``0700`` (created so, or tightened with a log line)."""
    try:
        folder.mkdir(parents=True, mode=0o700)
    except FileExistsError:
        loose = _open_to_others(folder)
        if loose is not None:
            os.chmod(folder, 0o700)
            log.warning("%s could be read by other users (mode %04o): now 0700", folder, loose)
        return
    os.chmod(folder, 0o700)  # mkdir's mode is filtered by the umask


def secure_data_folder(data_dir: Path, *, sqlite: bool) -> None:
    """The data folder ``0700`` and its private files ``0600``; with ``sqlite``, ``paperfeed.db`` is
    created ``0600`` here when missing, so SQLite never creates it with the umask's mode."""
    secure_folder(data_dir)
    if sqlite:
        database = data_dir / DATABASE
        try:
            fd = os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            os.fchmod(fd, 0o600)
            os.close(fd)
    for name in PRIVATE_FILES:
        path = data_dir / name
        loose = _open_to_others(path)
        if loose is not None:
            os.chmod(path, 0o600)
            log.warning("%s could be read by other users (mode %04o): now 0600", path, loose)


def private_file(path: Path) -> BinaryIO:
    """``path`` opened for writing (truncated), readable and writable by its owner only, whatever the
    umask and whatever mode an earlier file of that name had."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "wb")
