"""Administering the store: backups, copies to another database, the schema (``paperfeed backup``,
``restore``, ``copy``, ``migrate``, ``check``, ``stats``). The types the surfaces see; the adapter behind
:class:`StoreAdministration` is ``adapters/store_admin.py``, the service ``services/store_admin.py``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .ports import DerivedStats, StoreStats

__all__ = [
    "BackupInfo",
    "CopyProgress",
    "CopySummary",
    "CopyTarget",
    "SchemaState",
    "StoreAdministration",
]

CopyProgress = Callable[[str, int, int], None]  # (table, rows copied so far, rows in the source table)


@dataclass(frozen=True, slots=True)
class BackupInfo:
    created_at: str
    schema_revision: str | None
    papers: int
    sha256: str
    size: int
    secret_key: bool
    seconds: float = 0.0


@dataclass
class CopySummary:
    """Rows copied per table (in this run), and the tables the source does not have."""

    tables: dict[str, int] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    vector_index: str | None = None  # what was built on the target, if anything


@dataclass(frozen=True, slots=True)
class SchemaState:
    """Where the database is (its URL, password hidden), the schema revision it had when looked at (before
    an upgrade) and the one this version of paperfeed needs."""

    location: str
    current: str | None
    head: str | None

    @property
    def behind(self) -> bool:
        return self.current != self.head


class CopyTarget(Protocol):
    """Another database opened (and migrated) as the target of a copy; close it when done."""

    @property
    def location(self) -> str:
        """Its URL, password hidden."""
        ...

    def close(self) -> None: ...


class StoreAdministration(Protocol):
    """What the store's administration needs of the database (the errors it raises are the domain's:
    :class:`~paperfeed.domain.errors.StoreError`, :class:`~paperfeed.domain.errors.BackupError`)."""

    def stats(self) -> StoreStats:
        """The store's counts, read the cheapest way (``paperfeed stats``: no SQL library on SQLite)."""
        ...

    def derived_stats(self) -> DerivedStats: ...

    def open(self) -> StoreStats:
        """Open the store (creating or migrating it) and count it: ``serve`` and ``run`` start so."""
        ...

    def location(self) -> str:
        """The configured database's URL, password hidden."""
        ...

    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        ...

    def canonical_url(self, url: str) -> str:
        """``url`` as the store opens it (``postgresql://`` means psycopg 3), to compare two URLs."""
        ...

    def backup(self, dest: Path) -> BackupInfo: ...

    def restore(self, src: Path, *, force: bool) -> BackupInfo: ...

    def open_target(self, url: str) -> CopyTarget: ...

    def copy_into(
        self, target: CopyTarget, *, batch_size: int, progress: CopyProgress, restart: bool
    ) -> CopySummary: ...

    def schema(self, *, upgrade: bool) -> SchemaState:
        """The schema's state, after bringing it to this version's head when ``upgrade``."""
        ...
