"""Administering the SQL store: :class:`~paperfeed.domain.store_admin.StoreAdministration`.

Backups of a SQLite store (``adapters/backup.py``), copies into another database (``store/copy.py``), the
schema (``store/migrate.py``), the statistics ``paperfeed stats`` prints. The SQL library is imported
when a method needs it (``paperfeed stats`` on SQLite reads through the stdlib reader and never loads
it), and its errors are translated here into the domain's
(:class:`~paperfeed.domain.errors.StoreError`), so a command catches those alone.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from paperfeed.domain.errors import StoreError
from paperfeed.domain.ports import DerivedStats, StoreReads, StoreStats
from paperfeed.domain.store_admin import BackupInfo, CopyProgress, CopySummary, CopyTarget, SchemaState

if TYPE_CHECKING:
    from paperfeed.adapters.store import SqlPaperStore

__all__ = ["SqlStoreAdmin"]


@contextmanager
def _translated() -> Iterator[None]:
    """Any error of the SQL library as a :class:`StoreError` saying what the database answered (the
    library is looked at only when something failed: ``stats`` on SQLite never loads it)."""
    try:
        yield
    except StoreError:
        raise
    except Exception as exc:
        if "sqlalchemy" not in sys.modules:
            raise
        from sqlalchemy.exc import SQLAlchemyError

        if not isinstance(exc, SQLAlchemyError):
            raise
        raise StoreError(str(getattr(exc, "orig", None) or exc)) from exc


class _Target:
    """:class:`~paperfeed.domain.store_admin.CopyTarget` over an opened SQL store."""

    def __init__(self, store: SqlPaperStore) -> None:
        self.store = store

    @property
    def location(self) -> str:
        return self.store.engine.url.render_as_string(hide_password=True)

    def close(self) -> None:
        self.store.close()


class SqlStoreAdmin:
    """``db_url``: the configured database (``PAPERFEED_DATABASE_URL``, else the data folder's SQLite
    file); ``store`` and ``reads`` give the opened store and its read-only twin (opened on first use)."""

    def __init__(
        self,
        db_url: str,
        data_dir: Path,
        *,
        configured_url: bool,
        store: Callable[[], SqlPaperStore],
        reads: Callable[[], StoreReads],
    ) -> None:
        self.db_url = db_url
        self.data_dir = data_dir
        self.configured_url = configured_url
        self._store = store
        self._reads = reads

    def stats(self) -> StoreStats:
        with _translated():
            return self._reads().stats()

    def derived_stats(self) -> DerivedStats:
        with _translated():
            return self._reads().derived_stats()

    def open(self) -> StoreStats:
        with _translated():
            return self._store().stats()

    def location(self) -> str:
        with _translated():
            return self._store().engine.url.render_as_string(hide_password=True)

    def dialect(self) -> str:
        with _translated():
            return self._store().engine.dialect.name

    def canonical_url(self, url: str) -> str:
        from paperfeed.adapters.store.sql_store import normalise_url

        return normalise_url(url)

    def backup(self, dest: Path) -> BackupInfo:
        from paperfeed.adapters.backup import BACKUP_DB, backup_sqlite

        database = self.data_dir / BACKUP_DB
        if self.configured_url:
            database = Path(self.db_url.split(":///", 1)[1])
        return backup_sqlite(database, self.data_dir, dest)

    def restore(self, src: Path, *, force: bool) -> BackupInfo:
        from paperfeed.adapters.backup import restore_sqlite

        return restore_sqlite(src, self.data_dir, force=force)

    def open_target(self, url: str) -> CopyTarget:
        from paperfeed.adapters.store import open_store

        with _translated():
            return _Target(open_store(url))

    def copy_into(
        self, target: CopyTarget, *, batch_size: int, progress: CopyProgress, restart: bool
    ) -> CopySummary:
        from paperfeed.adapters.store.copy import copy_store

        assert isinstance(target, _Target), "a target this adapter opened"
        with _translated():
            source = self._store().engine
            return copy_store(
                source, target.store.engine, batch_size=batch_size, progress=progress, restart=restart
            )

    def schema(self, *, upgrade: bool) -> SchemaState:
        """On an engine that does not migrate on open (``paperfeed migrate``), disposed of after."""
        from paperfeed.adapters.data_folder import secure_data_folder
        from paperfeed.adapters.store import migrate
        from paperfeed.adapters.store.sql_store import make_engine

        secure_data_folder(self.data_dir, sqlite=not self.configured_url)
        engine = make_engine(self.db_url)
        where = engine.url.render_as_string(hide_password=True)
        try:
            with _translated():
                before, head = migrate.current_revision(engine), migrate.head_revision()
                if upgrade and before != head:
                    migrate.upgrade(engine)
        except StoreError as exc:
            raise StoreError(f"{where}: {exc}") from exc
        finally:
            engine.dispose()
        return SchemaState(where, before, head)
