"""The core every wing builds on: the settings, the stores, the secret, the public URL, the HTTP client,
the data folder and closing. Each is made on first use, so a command pays only for what it touches."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from sqlalchemy.engine import Engine

    from paperfeed.adapters.sources.http import PoliteClient
    from paperfeed.adapters.store import SqlPaperStore
    from paperfeed.adapters.store.job_runs import SqlJobStore
    from paperfeed.domain.ports import StoreReads
    from paperfeed.domain.supervision import SupervisorStatusStore
    from paperfeed.settings_model import SettingsModel

__all__ = ["Closeable", "Core", "intervals"]


class Closeable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closeable)


def intervals(delays: Sequence[tuple[str, float]]) -> dict[str, float]:
    """The polite HTTP client's delays by host, from ``(site URL, delay)`` pairs (a later pair wins)."""
    from urllib.parse import urlsplit

    return {urlsplit(url).netloc: delay for url, delay in delays}


@dataclass
class Core:
    """What the wings share (``bootstrap/__init__.py`` says what each wing builds on it)."""

    settings: SettingsModel
    _closers: list[Closeable] = field(default_factory=list, init=False)
    _first: list[Closeable] = field(default_factory=list, init=False)  # closed before everything else

    # -- the stores ------------------------------------------------------------------------------------

    @cached_property
    def store(self) -> SqlPaperStore:
        """The SQL store (SQLite or PostgreSQL), created or migrated on open."""
        from paperfeed.adapters.store import open_store

        self.secure_data_folder()
        return self.closing(open_store(self.settings.db_url))

    def engine(self) -> Engine:
        """The store's engine, for the adapters over its tables (opening the store on first use)."""
        return self.store.engine

    @cached_property
    def reads(self) -> StoreReads:
        """The store for commands that only look (``stats``, search): on SQLite a reader on Python's own
        driver when the file exists at the current schema, which starts without SQLAlchemy; otherwise the
        SQL store (which creates or migrates the database first)."""
        from paperfeed.adapters.sqlite_reads import open_sqlite_reads

        reads = open_sqlite_reads(self.settings.db_url)
        if reads is None:
            return self.store
        return self.closing(reads)

    @cached_property
    def job_runs(self) -> SqlJobStore:
        """Job runs and the leases that keep one runner per job and one scheduler (the jobs service and
        the library's background imports record their runs here)."""
        from paperfeed.adapters.store.job_runs import SqlJobStore

        return SqlJobStore(self.store.engine)

    # -- the instance --------------------------------------------------------------------------------------

    @cached_property
    def secret_key(self) -> bytes:
        """Keys CSRF tokens, rate-limit digests and signed links (``secret_key.py`` says where it comes
        from)."""
        from paperfeed.secret_key import resolve_secret

        return resolve_secret(self.settings)

    @property
    def public_url(self) -> str:
        """Where links in mail point: ``PAPERFEED_BASE_URL``; else, while a ``paperfeed run`` serves this
        data folder, the address it serves on (its ``--port`` is in no other process's settings: ``users
        add --link`` in another shell); else this instance's own host and port (never a request's Host
        header: see :mod:`paperfeed.public_url`)."""
        from paperfeed.public_url import public_url

        if not (self.settings.base_url or "").strip():
            from paperfeed.domain.supervision import served_url
            from paperfeed.services.jobs import holder_is_dead

            try:
                served = served_url(self.supervisors.read_all(), holder_is_dead)
            except OSError:
                served = None
            if served is not None:
                return served.rstrip("/")
        return public_url(self.settings)

    @cached_property
    def supervisors(self) -> SupervisorStatusStore:
        """What ``paperfeed run`` publishes about itself and its children (files in ``<data_dir>/run``,
        no database): ``maintenance.supervisors`` for the surfaces."""
        from paperfeed.adapters.supervisor_status import JsonSupervisorStatus

        return JsonSupervisorStatus(self.data_dir / "run")

    @cached_property
    def http(self) -> PoliteClient:
        """The polite HTTP client every harvest shares (per-site delays, retries)."""
        from paperfeed.adapters.sources.http import PoliteClient

        s = self.settings
        delays = intervals(
            (
                (s.arxiv_oai_url, s.arxiv_delay),
                (s.arxiv_api_url, s.arxiv_delay),
                (s.hf_api_url, s.hf_delay),
                (s.s2_api_url, s.s2_delay),
                (s.openalex_api_url, s.openalex_delay),
            )
        )
        client = PoliteClient(
            user_agent=s.user_agent(), timeout=s.http_timeout, retries=s.http_retries, min_interval=delays
        )
        return self.closing(client)

    # -- the data folder -----------------------------------------------------------------------------------

    @property
    def data_dir(self) -> Path:
        return self.settings.data_dir

    def secure_data_folder(self) -> None:
        """The data folder ``0700``, the SQLite database, its WAL and the secret key ``0600``, whatever the
        umask; looser existing ones are tightened and logged (``adapters/data_folder.py`` says why)."""
        from paperfeed.adapters.data_folder import secure_data_folder

        secure_data_folder(self.settings.data_dir, sqlite=self.settings.database_url is None)

    @staticmethod
    def write_private_file(path: Path, content: bytes) -> None:
        """Write ``content`` to ``path`` readable by its owner only (``0600``): a reader's data export."""
        from paperfeed.adapters.data_folder import private_file

        with private_file(path) as out:
            out.write(content)

    @staticmethod
    def release_free_memory() -> None:
        """Give the allocator's free pages back to the system after a large request (glibc)."""
        from paperfeed.adapters.memory import release_free_memory

        release_free_memory()

    # -- closing -----------------------------------------------------------------------------------------

    def closing(self, item: C) -> C:
        """``item``, closed when the App closes (in the reverse order of registration)."""
        self._closers.append(item)
        return item

    def closing_first(self, item: C) -> C:
        """``item``, closed before anything else when the App closes: background work that uses the
        store and the HTTP clients stops at its next step while they are still open."""
        self._first.append(item)
        return item

    def close(self) -> None:
        for item in [*self._first, *reversed(self._closers)]:
            item.close()
        self._first.clear()
        self._closers.clear()
