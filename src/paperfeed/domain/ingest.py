"""Units of ingestion: what a source hands to the store in one transaction, and what came of it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from .models import Listing, Paper

__all__ = [
    "Batch",
    "BatchResult",
    "DerivedIndex",
    "IngestSummary",
    "OpenedOnUse",
    "RawRecord",
    "Realized",
    "Reject",
    "StagingIndex",
]


@dataclass(frozen=True, slots=True)
class Reject:
    """A record that was not imported: where it was (``file:line`` or a record id), which field, why."""

    where: str
    reason: str
    field: str | None = None
    fatal: bool = False  # the source stopped here (a truncated file): nothing after it was read

    def __str__(self) -> str:
        what = f"{self.field}: " if self.field else ""
        return f"{self.where}: {what}{self.reason}"


@dataclass(frozen=True, slots=True)
class RawRecord:
    """A source record not yet validated: enough to tell whether it was already applied unchanged.

    ``key`` is the record's own id as the source spells it; ``fingerprint`` hashes its raw bytes (and the
    parser version), so an identical record seen again can be skipped without parsing or merging it.
    """

    key: str
    fingerprint: str
    where: str
    payload: Any


@dataclass(slots=True)
class Realized:
    """What validating raw records produced; plain data, so it can come back from a worker process."""

    papers: list[Paper] = field(default_factory=list)
    listings: list[Listing] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    fingerprints: dict[str, tuple[str, str]] = field(default_factory=dict)


@dataclass(slots=True)
class Batch:
    """Papers and listings written in one transaction, with the source's checkpoint after them.

    Writing the checkpoint in the same transaction as the data is what makes a killed harvest resume
    exactly where its last committed batch ended.
    """

    papers: list[Paper] = field(default_factory=list)
    listings: list[Listing] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    checkpoint: tuple[str, str] | None = None  # (name, opaque value)
    raw: list[RawRecord] = field(default_factory=list)  # realised by the source unless already applied
    ledger_source: str | None = None  # source name under which ``fingerprints`` are recorded
    fingerprints: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (paper id, fingerprint)
    position: int = 0  # progress in the source's unit (bytes read, records seen, days done)
    total: int | None = None  # the source's total in the same unit, when known

    def absorb(self, realized: Realized) -> None:
        self.papers.extend(realized.papers)
        self.listings.extend(realized.listings)
        self.rejects.extend(realized.rejects)
        self.fingerprints.update(realized.fingerprints)


@dataclass(frozen=True, slots=True)
class BatchResult:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    listings: int = 0
    skipped: int = 0  # raw records recognised as already applied (counted as unchanged)
    changed_ids: tuple[str, ...] = ()  # papers added or updated: what derived indexes must refresh
    # The same papers as now stored, and their ``modified_at``: derived indexes need not read them back.
    changed: tuple[Paper, ...] = field(default=(), compare=False, repr=False)
    written_at: datetime | None = None


@dataclass(slots=True)
class IngestSummary:
    """Counts for a whole import or harvest; ``rejects`` keeps the first few for the report.

    ``on_rejects`` sees every reject as its batch is stored (``paperfeed import --rejects FILE`` streams
    them all to the file, in constant memory); a fatal one comes after its batch's others.
    """

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: int = 0
    listings: int = 0
    broken: int = 0  # fatal rejects: files (or sources) that could not be read to their end
    rejects: list[Reject] = field(default_factory=list)
    on_rejects: Callable[[Sequence[Reject]], None] | None = field(default=None, compare=False, repr=False)

    def add(self, result: BatchResult, rejects: list[Reject], keep: int = 1000) -> None:
        self.added += result.added
        self.updated += result.updated
        self.unchanged += result.unchanged + result.skipped
        self.listings += result.listings
        self.rejected += len(rejects)
        if any(r.fatal for r in rejects):  # what stopped the source happened after everything else
            rejects = sorted(rejects, key=lambda r: r.fatal)
            self.broken += sum(r.fatal for r in rejects)
        if rejects and self.on_rejects is not None:
            self.on_rejects(rejects)
        room = keep - len(self.rejects)
        if room > 0:
            self.rejects.extend(rejects[:room])

    @property
    def seen(self) -> int:
        return self.added + self.updated + self.unchanged + self.rejected


class DerivedIndex(Protocol):
    """An index derived from the store (keyword search) that every batch of an import keeps in step."""

    def on_papers_changed(self, changed: BatchResult) -> None:
        """The batch committed: make its changed papers searchable before returning (or queue them)."""
        ...


@runtime_checkable
class OpenedOnUse(Protocol):
    """A :class:`DerivedIndex` opened on first use, where opening brings it up to the store (the batches
    a killed run stored and never indexed). An ingest run opens it before its first batch, so a rerun
    that finds nothing new still repairs what the killed run left."""

    def open(self) -> None: ...


@runtime_checkable
class StagingIndex(Protocol):
    """A :class:`DerivedIndex` that starts on a batch's papers while the store writes them.

    ``stage_papers`` runs inside the batch's transaction, before the rows are written (an index with
    threads of its own then works alongside the database); ``on_papers_changed`` after the commit
    publishes what was staged; ``discard_staged`` drops it when the transaction failed.
    """

    def stage_papers(self, papers: Sequence[Paper], written_at: datetime) -> None: ...

    def on_papers_changed(self, changed: BatchResult) -> None: ...

    def discard_staged(self) -> None: ...
