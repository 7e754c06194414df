"""Backups of a SQLite data folder with SQLite's online backup API, and their restore.

What a backup holds: the database — the one thing paperfeed cannot rebuild (papers, listings, accounts,
libraries, votes, comments, the digest ledger, checkpoints and the stored vectors) — copied as one
consistent snapshot while the server keeps writing (WAL: the copy is a single read transaction, writers
are never blocked), plus the data folder's generated ``secret_key`` if there is one (sessions, CSRF
tokens and the signed unsubscribe links of mail already sent depend on it), and ``backup.json``
(when, from which schema revision, how many papers, the SHA-256 of the copy).

What it leaves out, on purpose: the keyword index and the vector index. Both are derived from the
database and a copy taken beside a live database would be of another moment; ``restore`` rebuilds them
(the vector index from the stored vectors: nothing is re-embedded), and model files are fetched again
on first use.

PostgreSQL: use ``pg_dump``/``pg_restore`` (docs/operations.md); the indexes live in the database there.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import orjson

from paperfeed.adapters.data_folder import private_file, secure_folder
from paperfeed.adapters.files import fsync
from paperfeed.domain.errors import BackupError
from paperfeed.domain.store_admin import BackupInfo

__all__ = [
    "BACKUP_DB",
    "BACKUP_MANIFEST",
    "BackupInfo",
    "backup_sqlite",
    "read_backup",
    "restore_sqlite",
]

BACKUP_DB = "paperfeed.db"
BACKUP_MANIFEST = "backup.json"
SECRET_FILE = "secret_key"
_KEEP_ON_RESTORE = frozenset({"models"})  # cached model files: harmless, expensive to fetch again


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _facts(conn: sqlite3.Connection) -> tuple[str | None, int]:
    revision = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    papers = conn.execute("SELECT count(*) FROM papers").fetchone()[0]
    return (revision[0] if revision else None), int(papers)


def _check_integrity(conn: sqlite3.Connection, where: Path) -> None:
    result = conn.execute("PRAGMA quick_check").fetchall()
    if result != [("ok",)]:
        problems = "; ".join(str(r[0]) for r in result[:3])
        raise BackupError(f"{where}: the database copy is damaged ({problems})")


def backup_sqlite(
    database: Path, data_dir: Path, dest: Path, *, progress: Callable[[int, int], None] | None = None
) -> BackupInfo:
    """Copy ``database`` (live) into the new or empty folder ``dest``; returns what was written."""
    started = time.monotonic()
    if not database.is_file():
        raise BackupError(f"{database}: no database to back up")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise BackupError(f"{dest}: exists and is not an empty folder; choose a new one")
    secure_folder(dest)  # a copy of the database: the paperfeed user's alone, like the data folder
    partial = dest / f".{BACKUP_DB}.partial"
    private_file(partial).close()  # sqlite3 opens the empty 0600 file instead of creating one 0644
    source = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    try:
        source.execute("PRAGMA busy_timeout = 30000")
        target = sqlite3.connect(partial)
        try:
            # One step (pages=-1): the whole copy is one read transaction of the source, so it is a
            # single consistent snapshot however busy the writers are (a stepwise copy restarts
            # whenever another connection writes, and could never finish under steady writes).
            def report(_status: int, remaining: int, total: int) -> None:
                if progress is not None:
                    progress(total - remaining, total)

            source.backup(target, pages=-1, progress=report)
            target.execute("PRAGMA journal_mode = DELETE")  # one self-contained file, no -wal beside it
            _check_integrity(target, partial)
            revision, papers = _facts(target)
        finally:
            target.close()
    except sqlite3.Error as exc:
        partial.unlink(missing_ok=True)
        raise BackupError(f"{database}: backup failed ({exc})") from exc
    finally:
        source.close()
    fsync(partial)
    os.replace(partial, dest / BACKUP_DB)
    secret = data_dir / SECRET_FILE
    if secret.is_file():
        shutil.copy2(secret, dest / SECRET_FILE)
        os.chmod(dest / SECRET_FILE, 0o600)
    info = BackupInfo(
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        schema_revision=revision,
        papers=papers,
        sha256=_sha256(dest / BACKUP_DB),
        size=(dest / BACKUP_DB).stat().st_size,
        secret_key=secret.is_file(),
    )
    manifest = {
        "format": 1,
        "created_at": info.created_at,
        "schema_revision": info.schema_revision,
        "papers": info.papers,
        "database": {"file": BACKUP_DB, "sha256": info.sha256, "bytes": info.size},
        "secret_key": info.secret_key,
        "indexes": "not included: restore rebuilds the keyword and vector indexes from the database",
    }
    (dest / BACKUP_MANIFEST).write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    fsync(dest / BACKUP_MANIFEST)
    fsync(dest)
    return _timed(info, started)


def _timed(info: BackupInfo, started: float) -> BackupInfo:
    return BackupInfo(
        info.created_at,
        info.schema_revision,
        info.papers,
        info.sha256,
        info.size,
        info.secret_key,
        time.monotonic() - started,
    )


def read_backup(src: Path) -> BackupInfo:
    """Read and verify a backup folder: its manifest, the database's checksum and integrity."""
    manifest_path, db = src / BACKUP_MANIFEST, src / BACKUP_DB
    try:
        raw = orjson.loads(manifest_path.read_bytes())
        expected = str(raw["database"]["sha256"])
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise BackupError(f"{manifest_path}: not a paperfeed backup ({exc})") from exc
    if not db.is_file():
        raise BackupError(f"{db}: the backup's database is missing")
    actual = _sha256(db)
    if actual != expected:
        raise BackupError(f"{db}: checksum {actual[:12]}… differs from the manifest's {expected[:12]}…")
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        _check_integrity(conn, db)
    finally:
        conn.close()
    return BackupInfo(
        str(raw.get("created_at", "")),
        raw.get("schema_revision"),
        int(raw.get("papers", 0)),
        actual,
        db.stat().st_size,
        (src / SECRET_FILE).is_file(),
    )


def occupied(data_dir: Path) -> list[str]:
    """What in ``data_dir`` a restore would replace (model files are kept and do not count)."""
    if not data_dir.is_dir():
        return []
    return sorted(p.name for p in data_dir.iterdir() if p.name not in _KEEP_ON_RESTORE)


def restore_sqlite(src: Path, data_dir: Path, *, force: bool = False) -> BackupInfo:
    """Put the backup in ``src`` in place as ``data_dir``'s database (and secret key).

    Refuses a data folder that holds anything but model files unless ``force``; with ``force`` the old
    database, its WAL files and both indexes are removed. The database is restored into a temporary file
    and renamed into place, so an interrupted restore leaves no half-written database behind.
    Stop every paperfeed process using ``data_dir`` first.
    """
    info = read_backup(src)
    found = occupied(data_dir)
    if found and not force:
        shown = ", ".join(found[:5]) + (" …" if len(found) > 5 else "")
        raise BackupError(
            f"{data_dir}: not empty ({shown}); restoring would replace it — stop paperfeed and pass --force"
        )
    secure_folder(data_dir)
    database = data_dir / BACKUP_DB
    if database.exists():
        try:  # a process in the middle of a write holds a lock: do not pull the file from under it
            probe = sqlite3.connect(database, timeout=0.5)
            probe.execute("BEGIN IMMEDIATE")
            probe.rollback()
            probe.close()
        except sqlite3.OperationalError as exc:
            raise BackupError(f"{database}: in use by another process ({exc}); stop paperfeed first") from exc
    partial = data_dir / f".{BACKUP_DB}.restoring"
    partial.unlink(missing_ok=True)
    with (src / BACKUP_DB).open("rb") as copied, private_file(partial) as out:
        shutil.copyfileobj(copied, out)
    fsync(partial)
    for name in found:
        path = data_dir / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path != partial:
            path.unlink(missing_ok=True)
    os.replace(partial, database)
    if (src / SECRET_FILE).is_file():
        shutil.copy2(src / SECRET_FILE, data_dir / SECRET_FILE)
        os.chmod(data_dir / SECRET_FILE, 0o600)
    fsync(data_dir)
    return info
