"""Ports: the interfaces services need, implemented by adapters (store, sources, ...)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Protocol, runtime_checkable

from .ingest import Batch, BatchResult, RawRecord, Realized
from .models import Listing, Paper
from .topics import TopicBuild

__all__ = [
    "BeforeWrite",
    "DerivedStats",
    "PaperFetcher",
    "PaperLookup",
    "PaperSource",
    "PaperStore",
    "ProgressReporter",
    "RecordRealizer",
    "StoreReads",
    "StoreStats",
]


# Told, inside a batch's transaction, the papers about to be written and their modified_at.
BeforeWrite = Callable[[Sequence[Paper], datetime], None]


@dataclass(frozen=True, slots=True)
class StoreStats:
    papers: int
    listings: int
    listing_days: int
    by_source: dict[str, int]
    first_published: str | None
    last_published: str | None
    location: str


@dataclass(frozen=True, slots=True)
class DerivedStats:
    """What ``paperfeed stats`` tells besides the papers: what was derived from them."""

    vectors: dict[str, int]  # embedding model id -> papers with a stored vector of that model
    topics: TopicBuild | None  # the current topics build (None: never built)


class PaperLookup(Protocol):
    """Papers by id: all that searching needs of the store."""

    def get_paper(self, paper_id: str) -> Paper | None: ...

    def get_papers(self, paper_ids: Sequence[str]) -> dict[str, Paper]: ...


class StoreReads(PaperLookup, Protocol):
    """What a command that only looks at the store needs (``paperfeed stats``, a keyword search).

    The SQL store implements it; so does a reader of a SQLite store on Python's own ``sqlite3`` driver,
    which starts without SQLAlchemy (most of such a command's start-up time: docs/cli.md).
    """

    def stats(self) -> StoreStats: ...

    def count_papers(self) -> int: ...

    def derived_stats(self) -> DerivedStats:
        """Vectors per embedding model and the current topics build (``paperfeed stats``)."""
        ...

    def hidden_paper_ids(self) -> frozenset[str]:
        """Papers an administrator hid (kept out of search results)."""
        ...

    def changed_after(self, moment: datetime) -> bool:
        """Whether any paper was written (``modified_at``) after ``moment``: is a derived index that
        followed the store up to ``moment`` still current?"""
        ...

    def close(self) -> None: ...


class PaperStore(Protocol):
    """Where papers live. One writer at a time; every ``apply_batch`` is atomic."""

    def apply_batch(self, batch: Batch, *, before_write: BeforeWrite | None = None) -> BatchResult: ...

    def get_paper(self, paper_id: str) -> Paper | None: ...

    def get_papers(self, paper_ids: Sequence[str]) -> dict[str, Paper]: ...

    def listings_for_day(self, day: date, source: str | None = None) -> list[Listing]: ...

    def get_checkpoint(self, name: str) -> str | None: ...

    def known_fingerprints(self, source: str, keys: Sequence[str]) -> dict[str, str]:
        """Fingerprints of raw records of ``source`` already applied, by record key."""
        ...

    def clear_checkpoint(self, name: str) -> None: ...

    def iter_papers(self, batch_size: int = 1000) -> Iterator[list[Paper]]: ...

    def stats(self) -> StoreStats: ...

    def close(self) -> None: ...


class PaperSource(Protocol):
    """Anything that yields batches of papers: a file, an OAI-PMH harvest, an API."""

    @property
    def name(self) -> str:
        """Source name recorded in each paper's ``sources`` (e.g. ``hf-daily``, ``file:x.jsonl``)."""
        ...

    def batches(self, resume_from: str | None) -> Iterator[Batch]:
        """Yield batches; ``resume_from`` is the last committed checkpoint value, if any."""
        ...

    @property
    def checkpoint_name(self) -> str | None:
        """Key under which this source's progress is checkpointed; ``None`` for no resume."""
        ...


@runtime_checkable
class RecordRealizer(Protocol):
    """A source that yields raw records (``Batch.raw``) and validates only those not already applied."""

    def realize(self, records: Sequence[RawRecord]) -> Realized:
        """Validate ``records`` into papers, listings, rejects and fingerprints.

        Must be a pure function of the source's configuration and ``records`` (it may run in a worker
        process, with the source pickled).
        """
        ...


class ProgressReporter(Protocol):
    """Told how a long job advances; the CLI draws a progress bar, tests may record."""

    def update(self, position: int, total: int | None, added: int, updated: int, rejected: int) -> None: ...


class PaperFetcher(Protocol):
    """Named papers from an upstream catalogue (the arXiv API, ``adapters/sources/arxiv_api.py``), as a
    source the ingest service imports like any harvest: services fetch without knowing the adapter.

    Reading the source raises :class:`SourceUnavailable` when the catalogue cannot be reached and
    :class:`SourceAnswerError` when it answers with something that is not a list of papers; an id it does
    not know comes back as a reject.
    """

    def papers(self, ids: Sequence[str]) -> PaperSource: ...
