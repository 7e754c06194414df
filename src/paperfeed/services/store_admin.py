"""Administering the store, for the commands that do it (``paperfeed stats``, ``backup``, ``restore``,
``copy``, ``migrate``, ``check``, ``serve``): one service, so no surface holds the store itself."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from paperfeed.domain.errors import InvalidDatabaseUrl, StoreError
from paperfeed.domain.ports import DerivedStats, StoreStats
from paperfeed.domain.store_admin import (
    BackupInfo,
    CopyProgress,
    CopySummary,
    SchemaState,
    StoreAdministration,
)

__all__ = ["CopyRefused", "StoreAdmin"]


class CopyRefused(StoreError):
    """A copy that must not start (the message says why)."""


@dataclass(frozen=True)
class StoreAdmin:
    admin: StoreAdministration

    def stats(self) -> StoreStats:
        return self.admin.stats()

    def derived_stats(self) -> DerivedStats:
        return self.admin.derived_stats()

    def open(self) -> StoreStats:
        """Open the store (creating or migrating it) before anything else does, and count it."""
        return self.admin.open()

    def location(self) -> str:
        """The configured database's URL, password hidden."""
        return self.admin.location()

    def is_postgresql(self) -> bool:
        return self.admin.dialect() == "postgresql"

    def backup(self, dest: Path) -> BackupInfo:
        """A consistent snapshot of the SQLite database (and the data folder's secret key) in ``dest``."""
        return self.admin.backup(dest)

    def restore(self, src: Path, *, force: bool) -> BackupInfo:
        """Put the backup in ``src`` in place as the data folder's database (before the store is opened)."""
        return self.admin.restore(src, force=force)

    def copy_to(
        self, url: str, *, current: str, batch_size: int, progress: CopyProgress, restart: bool
    ) -> tuple[str, CopySummary]:
        """Copy every table of the store into the database at ``url`` (migrated to this version first),
        resuming where an earlier copy stopped; the target's location and what was copied. ``current``
        is the configured database's URL: a copy onto itself is refused (:class:`CopyRefused`)."""
        target_url = self.admin.canonical_url(url)
        if self.admin.canonical_url(current) == target_url:
            raise CopyRefused("--to names the database paperfeed already uses")
        self.admin.location()  # the source opened first: one that cannot be opened is reported as such
        try:
            target = self.admin.open_target(target_url)
        except InvalidDatabaseUrl:
            raise
        except StoreError as exc:
            raise StoreError(f"cannot open {url}: {exc}") from exc
        try:
            summary = self.admin.copy_into(target, batch_size=batch_size, progress=progress, restart=restart)
        except StoreError as exc:
            raise StoreError(f"copy to {target.location} stopped: {exc}; run it again to resume") from exc
        finally:
            target.close()
        return target.location, summary

    def canonical_url(self, url: str) -> str:
        return self.admin.canonical_url(url)

    def schema(self, *, upgrade: bool = False) -> SchemaState:
        """The schema's revision and the one this version needs; brought to it when ``upgrade``."""
        return self.admin.schema(upgrade=upgrade)
