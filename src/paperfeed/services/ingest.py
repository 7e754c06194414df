"""Ingestion: pull batches from a source, apply each with its checkpoint, count, report progress.

With ``workers > 0`` and a source whose records are validated separately (:class:`RecordRealizer`),
validation runs in worker processes while this process reads ahead and writes: on a 2-core machine the
parse/validate half and the database half of an import then overlap. Batches are still applied in
source order, each by the store with its checkpoint (in short transactions: docs/data-model.md), so
checkpoints and kill -9 safety are unchanged.

Derived ``indexes`` (the keyword index) follow each batch: one that can (:class:`StagingIndex`) gets the
batch's papers before they are written and works on them while the rows are written, then publishes them
after the commit: a paper is searchable once its batch is reported done. For a file, the next batch is
read first (a fraction of a second), so the reading overlaps the index's work; a stored batch is
published even if reading on fails.
"""

from __future__ import annotations

import gc
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from multiprocessing import get_context
from operator import attrgetter
from typing import Any

from paperfeed.domain.ingest import (
    Batch,
    BatchResult,
    DerivedIndex,
    IngestSummary,
    OpenedOnUse,
    RawRecord,
    Realized,
    Reject,
    StagingIndex,
)
from paperfeed.domain.models import Listing, Paper
from paperfeed.domain.ports import PaperSource, PaperStore, ProgressReporter, RecordRealizer

# Called after each committed batch that added or changed papers, with its result: the changed ids and
# the papers as stored (derived indexes refresh them without reading them back).
ChangeListener = Callable[[BatchResult], None]

__all__ = ["ChangeListener", "IngestService"]


# An import allocates a few million short-lived containers that reference counting frees; the cycle
# collector's passes over them and over every long-lived object of the process cost ~15 us per paper
# (measured on the real files: 114 -> 100 us of main-thread CPU per record). During an import, objects
# that already exist are frozen out of its passes and young ones are collected 70x less often.
_GC_THRESHOLD = 50_000
_gc_lock = threading.Lock()
_gc_users = 0
_gc_saved: tuple[int, int, int] = gc.get_threshold()
_gc_froze = False


@contextmanager
def _fewer_collections() -> Iterator[None]:
    global _gc_users, _gc_saved, _gc_froze
    with _gc_lock:
        if _gc_users == 0:
            _gc_saved = gc.get_threshold()
            _gc_froze = gc.get_freeze_count() == 0  # someone else's freeze (a pre-fork server) is kept
            if _gc_froze:
                gc.freeze()
            gc.set_threshold(max(_GC_THRESHOLD, _gc_saved[0]), *_gc_saved[1:])
        _gc_users += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_users -= 1
            if _gc_users == 0:
                gc.set_threshold(*_gc_saved)
                if _gc_froze:
                    gc.unfreeze()


def _worker_init() -> None:
    """Validation worker processes do nothing but imports: the same collector settings for good."""
    gc.freeze()
    gc.set_threshold(max(_GC_THRESHOLD, gc.get_threshold()[0]), *gc.get_threshold()[1:])


# What crosses between this process and a validation worker: plain tuples, not dataclass instances.
# Pickle handles a frozen slotted dataclass field by field in Python: papers as tuples cost about a
# third (measured 30 -> 11 us per paper for the round trip, pickling and rebuilding included).
_PAPER_FIELDS = attrgetter(*(f.name for f in fields(Paper)))
_LISTING_FIELDS = attrgetter(*(f.name for f in fields(Listing)))
_RAW_FIELDS = attrgetter(*(f.name for f in fields(RawRecord)))
_Packed = tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[Reject], dict[str, tuple[str, str]]]


def _realize_packed(source: RecordRealizer, records: list[tuple[Any, ...]]) -> _Packed:
    """Run in a worker process: validate raw ``records`` (packed) and pack the result for the trip back."""
    done = source.realize([RawRecord(*row) for row in records])
    papers = [_PAPER_FIELDS(p) for p in done.papers]
    return papers, [_LISTING_FIELDS(x) for x in done.listings], done.rejects, done.fingerprints


def _unpack(packed: _Packed) -> Realized:
    papers, listings, rejects, fingerprints = packed
    return Realized([Paper(*p) for p in papers], [Listing(*x) for x in listings], rejects, fingerprints)


def _stage_all(indexes: list[StagingIndex]) -> Callable[[Sequence[Paper], datetime], None]:
    def stage(papers: Sequence[Paper], written_at: datetime) -> None:
        for index in indexes:
            index.stage_papers(papers, written_at)

    return stage


@dataclass
class IngestService:
    """Applies a source's batches to the store; ``indexes`` follow each batch as it commits (a paper is
    searchable once its batch is done), ``listeners`` are told about every committed batch."""

    store: PaperStore
    listeners: list[ChangeListener] = field(default_factory=list)
    indexes: list[DerivedIndex] = field(default_factory=list)

    def checkpoint(self, name: str) -> str | None:
        """Where the source checkpointed as ``name`` got to (``paperfeed harvest hf`` resumes there)."""
        return self.store.get_checkpoint(name)

    def clear_checkpoint(self, name: str) -> None:
        """Forget the checkpoint ``name`` (a source that finished: the next run starts afresh)."""
        self.store.clear_checkpoint(name)

    def run(
        self,
        source: PaperSource,
        progress: ProgressReporter | None = None,
        *,
        resume: bool = True,
        summary: IngestSummary | None = None,
        workers: int = 0,
    ) -> IngestSummary:
        """Ingest everything ``source`` yields; resumes from its checkpoint unless ``resume`` is False.

        Each batch commits on its own with the source's checkpoint, so an interrupted run loses at most
        the batch in flight and a re-run picks up after the last committed one.
        """
        summary = summary if summary is not None else IngestSummary()
        for index in self.indexes:  # up to the store first: a killed run's stored, unindexed batches
            if isinstance(index, OpenedOnUse):
                index.open()
        name = source.checkpoint_name
        start = self.store.get_checkpoint(name) if (resume and name) else None
        with ExitStack() as stack:
            stack.enter_context(_fewer_collections())
            pool: ProcessPoolExecutor | None = None
            if workers > 0 and isinstance(source, RecordRealizer):
                pool = stack.enter_context(
                    ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=_worker_init)
                )
            # A file's next batch is read (and collected from the worker) before this batch's index
            # commit: the reading overlaps the index's analysis of this batch. Other sources (network
            # harvests, whose next batch may be seconds away) publish each batch before reading on.
            defer = isinstance(source, RecordRealizer)
            pending: tuple[Batch, BatchResult] | None = None
            try:
                for batch, skipped in self._realized(source, source.batches(start), pool, workers):
                    if pending is not None:
                        done, pending = pending, None
                        self._publish(*done, summary, progress)
                    result = self._write(batch, skipped, summary)
                    if defer:
                        pending = (batch, result)
                    else:
                        self._publish(batch, result, summary, progress)
            finally:
                if pending is not None:  # stored already: publish it whatever stopped the reading
                    self._publish(*pending, summary, progress)
        return summary

    def _fresh(self, source: PaperSource, batch: Batch) -> list[RawRecord]:
        """Raw records of ``batch`` not already applied with the same fingerprint."""
        known = self.store.known_fingerprints(batch.ledger_source or source.name, [r.key for r in batch.raw])
        return [r for r in batch.raw if known.get(r.key) != r.fingerprint]

    def _realized(
        self, source: PaperSource, batches: Iterator[Batch], pool: ProcessPoolExecutor | None, depth: int
    ) -> Iterator[tuple[Batch, int]]:
        """Yield batches in order with their raw records validated, keeping ``depth`` in flight."""
        inflight: deque[tuple[Batch, int, Future[_Packed] | Realized | None]] = deque()
        for batch in batches:
            skipped = 0
            work: Future[_Packed] | Realized | None = None
            if batch.raw and isinstance(source, RecordRealizer):
                fresh = self._fresh(source, batch)
                skipped = len(batch.raw) - len(fresh)
                if fresh:
                    if pool is None:
                        work = source.realize(fresh)
                    else:
                        work = pool.submit(_realize_packed, source, [_RAW_FIELDS(r) for r in fresh])
            inflight.append((batch, skipped, work))
            while len(inflight) > (depth if pool else 0):
                yield self._collect(*inflight.popleft())
        while inflight:
            yield self._collect(*inflight.popleft())

    @staticmethod
    def _collect(batch: Batch, skipped: int, work: Future[_Packed] | Realized | None) -> tuple[Batch, int]:
        if work is not None:
            batch.absorb(_unpack(work.result()) if isinstance(work, Future) else work)
        return batch, skipped

    def _write(self, batch: Batch, skipped: int, summary: IngestSummary) -> BatchResult:
        """Store ``batch`` (one transaction), staging its papers in the indexes that can take them."""
        staging = [index for index in self.indexes if isinstance(index, StagingIndex)]
        try:
            result = self.store.apply_batch(batch, before_write=_stage_all(staging) if staging else None)
        except BaseException:
            for index in staging:
                index.discard_staged()
            raise
        if skipped:
            result = replace(result, skipped=skipped)
        summary.add(result, batch.rejects)
        return result

    def _publish(
        self, batch: Batch, result: BatchResult, summary: IngestSummary, progress: ProgressReporter | None
    ) -> None:
        """The batch is stored: bring the indexes up to it, tell listeners, report progress."""
        if result.changed_ids:
            for derived in self.indexes:
                derived.on_papers_changed(result)
            for listener in self.listeners:
                listener(result)
        if progress is not None:
            progress.update(batch.position, batch.total, summary.added, summary.updated, summary.rejected)
