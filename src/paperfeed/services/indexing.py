"""Background embedding: embed every paper whose vector is missing or stale, then refresh the vector index.

The backlog is never stored: it is "papers with no vector of the configured model for their current
text", recomputed from the embeddings table. Each batch's vectors commit in one transaction, so a killed
job loses at most the batch in flight and a re-run starts where it stopped. Changing the model makes every
paper stale at once; each vector of the old model is replaced by one of the new, and readers only ever
ask for one model's vectors, so the two spaces never mix.

With a sentence indexer (``sentences``, the indexer of the same embedder) each batch is embedded with its
sentences: one forward pass per paper gives its vector and its sentences' (late chunking, issue #39), the
vectors are committed first and the sentences right after.

The vector index is saved after each batch that finished at least ``sync_every`` seconds after the last
save, and at most as often as keeps saving under a tenth of the run (:data:`SYNC_COST_RATIO`; a large
index takes longer to write), so the serving processes, which reload it within
``PAPERFEED_VECTOR_RELOAD_SECONDS``, search a batch's papers seconds after it is written.

The vector index is derived data. Its sync point is a high-water mark (the newest vector it holds, kept in
the database *after* the index is saved), so an index that missed updates because the process died
between committing vectors and saving the index catches up on the next run, and one that drifted (its
size disagrees with the table) is rebuilt from the stored vectors without re-embedding anything.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal

import numpy as np

from paperfeed.domain.embedding import (
    EmbeddedBatch,
    EmbeddingStore,
    EmbedWorkers,
    IndexMarks,
    PendingPaper,
    vector_index_mark,
)
from paperfeed.domain.embedding_claims import WorkerState
from paperfeed.domain.errors import EmbedderUnavailable
from paperfeed.domain.indexing_status import IndexerReports, IndexerState
from paperfeed.domain.ports import ProgressReporter
from paperfeed.domain.search import Embedder, IndexOpener, VectorIndex, VectorIndexError
from paperfeed.domain.wording import agree, count, every
from paperfeed.services.indexer_status import IndexerReporter

if TYPE_CHECKING:
    from paperfeed.domain.embedding import Vectors
    from paperfeed.services.embed_claims import ClaimedBacklog
    from paperfeed.services.sentences import SentenceIndexer

__all__ = ["IndexPlan", "IndexSync", "IndexingService", "IndexingSummary", "WorkerRate"]

log = logging.getLogger(__name__)

DEFAULT_BATCH = 128
REPORT_EVERY_SECONDS = 5.0  # how often a run records its progress for /admin/jobs (one small upsert)
SYNC_EVERY_SECONDS = 2.0  # the vector index is saved after a batch at most this often (issue #39: was 600)
SYNC_COST_RATIO = 10.0  # ... and only once the run went on for this many times the last save's duration
# A vector's time is taken just before its transaction commits: with several writers (workers sharing the
# backlog), one stamped a moment before a sync read the newest time can become visible just after it. An
# incremental sync therefore re-reads this much before its mark (upserts are idempotent).
SYNC_OVERLAP = timedelta(seconds=60)


@dataclass(frozen=True, slots=True)
class IndexPlan:
    """What a run is about to do, so the CLI can say so before the long part starts."""

    model_id: str
    papers: int
    backlog: int  # papers to embed
    previous_models: dict[str, int]  # other models that still have vectors (a model change)
    rebuild: bool

    @property
    def model_changed(self) -> bool:
        return bool(self.previous_models)

    def message(self) -> str:
        if self.rebuild:
            if not self.backlog:
                return f"rebuilding: no papers to embed with {self.model_id}"
            return f"rebuilding: re-embedding {every(self.backlog, 'paper')} with {self.model_id}"
        if self.model_changed:
            old = ", ".join(sorted(self.previous_models))
            return f"model changed from {old} to {self.model_id}: re-embedding {count(self.backlog, 'paper')}"
        if self.backlog:
            done = self.papers - self.backlog
            return (
                f"embedding {count(self.backlog, 'paper')} with {self.model_id} ({done:,} already up to date)"
            )
        if not self.papers:
            return f"no papers yet: nothing to embed with {self.model_id}"
        return (
            f"{every(self.papers, 'paper')} {agree(self.papers, 'is', 'are')} embedded with {self.model_id}"
        )


@dataclass(frozen=True, slots=True)
class IndexSync:
    mode: Literal["incremental", "full"]
    size: int
    upserted: int


@dataclass
class WorkerRate:
    """What one embedding worker process did in a run (``--workers N``)."""

    pid: int
    papers: int = 0
    busy_seconds: float = 0.0  # embedding, the model's loading excluded
    load_seconds: float = 0.0

    def rate(self, wall_seconds: float) -> float:
        """Papers/s over the run's wall time: the workers' rates add up to the run's."""
        return self.papers / wall_seconds if wall_seconds > 0 else 0.0

    @property
    def busy_rate(self) -> float:
        """Papers/s while embedding: the worker's own speed."""
        return self.papers / self.busy_seconds if self.busy_seconds > 0 else 0.0


@dataclass
class IndexingSummary:
    model_id: str
    embedded: int = 0
    added: int = 0  # papers that had no vector at all
    replaced: int = 0  # papers whose vector was of older text or of another model
    remaining: int = 0  # backlog left when --limit (or a stop) ended the run early
    sentences: int = 0  # papers whose sentences were made in the same pass (``sentences`` wired)
    seconds: float = 0.0
    index: IndexSync | None = None  # None: no vector index is configured
    workers: list[WorkerRate] = field(default_factory=list)  # empty: embedded in this process
    stopped: bool = False  # asked to stop (Ctrl-C) before the backlog was done

    @property
    def rate(self) -> float:
        return self.embedded / self.seconds if self.seconds > 0 else 0.0


class IndexingService:
    """Embeds the backlog in committed batches and keeps the vector index in step."""

    def __init__(
        self,
        store: EmbeddingStore,
        embedder: Embedder,
        open_index: IndexOpener | None = None,
        *,
        batch_size: int,
        sync_every: float = SYNC_EVERY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        marks: IndexMarks | None = None,
        reports: IndexerReports | None = None,
        report_every: float = REPORT_EVERY_SECONDS,
        sentences: SentenceIndexer | None = None,
        claims: ClaimedBacklog | None = None,
    ) -> None:
        """``marks``: where the index's sync point is kept (default: the store, for an index every process
        shares; a node-local index on PostgreSQL keeps its own next to it). ``reports``: where this process
        says how far it is and how fast it goes (/admin/jobs and the search's coverage notice read it), at
        most every ``report_every`` s. ``sentences``: the sentence indexer of ``embedder``, to embed each
        batch with its sentences (None: vectors only). ``claims``: take batches as claims, so several
        processes (on one machine or many) share the backlog without embedding a paper twice
        (``services/embed_claims.py``); None: this process reads the backlog alone."""
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.store = store
        self.embedder = embedder
        self.open_index = open_index
        self.batch_size = batch_size
        self.sync_every = sync_every
        self._clock = clock
        self.marks: IndexMarks = marks if marks is not None else store
        self.reports = reports
        self.report_every = report_every
        self.sentences = sentences
        self._sync_cost = 0.0  # seconds the last save of the vector index took
        # says this process's phase, progress and recent rate (services/indexer_status.py); the follower
        # reports its other phases (sentences, topics, idle) through the same one
        self.reporter = (
            IndexerReporter(reports, every=report_every, clock=clock) if reports is not None else None
        )
        self.claims = claims
        self._syncs = True  # this run syncs the vector index (run(sync=False): it leaves it to others)
        self._run: tuple[float, int] = (clock(), 0)  # the current run's start and backlog, for reports
        self._followed = False  # follow_index(): looked at least once
        self._followed_signal: datetime | None = None

    def stored_vectors(self) -> int:
        """Papers with a stored vector of this service's model."""
        return self.store.model_counts().get(self.embedder.model_id, 0)

    def plan(self, *, rebuild: bool = False) -> IndexPlan:
        model_id = self.embedder.model_id
        papers = self.store.count_papers()
        others = {m: n for m, n in self.store.model_counts().items() if m != model_id}
        backlog = papers if rebuild else self.store.count_backlog(model_id)
        return IndexPlan(model_id, papers, backlog, others, rebuild)

    def run(
        self,
        progress: ProgressReporter | None = None,
        *,
        rebuild: bool = False,
        limit: int | None = None,
        batch_size: int | None = None,
        workers: EmbedWorkers | None = None,
        stop: Callable[[], bool] | None = None,
        sentences: bool = True,
        then: IndexerState | None = "stopped",
        sync: bool = True,
    ) -> IndexingSummary:
        """Embed up to ``limit`` papers of the backlog (all by default), then sync the vector index.

        ``rebuild`` forgets every stored vector first (all models) and rebuilds the index from scratch.
        ``workers``: embed in those processes (this one stays the only writer) instead of in this one
        (vectors only: the sentence pass does their sentences).
        ``stop``: asked between batches; once it answers True the run commits what is done and ends.
        ``sentences``: make each batch's sentences in the same pass, when a sentence indexer is wired.
        ``then``: what the run reports when it ends (a one-off embeds nothing more: "stopped"); None for
        the follower, which reports what it does next itself.
        ``sync``: False stores the vectors only, the vector index left to others (a worker machine whose
        nodes keep their own index and follow the store).
        """
        started = self._clock()
        model_id = self.embedder.model_id
        size = batch_size or self.batch_size
        summary = IndexingSummary(model_id)
        if rebuild:
            self.store.delete_all()
            self.marks.set_mark(self._mark(model_id), None)  # marks kept outside the store too
        backlog = self.store.count_backlog(model_id)
        target = backlog if limit is None else min(backlog, max(0, limit))
        self._run = (started, backlog)
        if target:
            self.report("embedding", summary, force=True)
        if progress is not None:
            progress.update(0, target, 0, 0, 0)
        ended: WorkerState = "failed"
        self._syncs = sync
        if self.claims is not None and target:
            self.claims.open(model_id)
        try:
            if workers is None:
                self._embed_here(summary, target, size, progress, stop, self.sentences if sentences else None)
            else:
                self._embed_in(workers, summary, target, size, progress, stop)
            summary.remaining = max(0, backlog - summary.embedded)
            if self.claims is not None and target and summary.embedded < target:
                summary.remaining = self.store.count_backlog(model_id)  # other workers embedded some
            ended = "stopped" if summary.stopped or summary.remaining else "finished"
            if self.open_index is not None:
                summary.index = self._sync(wait=True)  # after a rebuild the mark is gone: a full sync
        except BaseException as exc:
            if not isinstance(exc, Exception):  # Ctrl-C, SIGTERM's unwinding: stopped, not failed
                ended = "stopped"
            raise
        finally:
            if self.claims is not None and target:
                self.claims.close(ended)
            # the run is over: a one-off (the CLI, the daily job's step) embeds nothing more, so readers must
            # not be told an indexer is at work; a follower (index --follow) says what it does next
            if target and then is not None:
                self.report(then, summary, remaining=max(0, backlog - summary.embedded), force=True)
        summary.seconds = self._clock() - started
        return summary

    def report(
        self,
        state: IndexerState,
        summary: IndexingSummary | None = None,
        *,
        remaining: int | None = None,
        force: bool = False,
    ) -> None:
        """Tell ``reports`` what this process is doing (at most every ``report_every`` s unless ``force``):
        the current run's papers embedded, those left (``remaining``, else counted from the run's backlog)
        and the rate of its recent batches (:class:`IndexerReporter`)."""
        if self.reporter is None:
            return
        _started, backlog = self._run
        embedded = summary.embedded if summary is not None else 0
        left = max(0, backlog - embedded) if remaining is None else remaining
        self.reporter.report(state, done=embedded, remaining=left, force=force)

    def _embed_here(
        self,
        summary: IndexingSummary,
        target: int,
        size: int,
        progress: ProgressReporter | None,
        stop: Callable[[], bool] | None,
        sentences: SentenceIndexer | None,
    ) -> None:
        """One batch at a time, embedded in this process (with its sentences when ``sentences``)."""
        after = ""
        last_sync = self._clock()
        began = datetime.now(UTC)
        while summary.embedded < target and not (stop is not None and stop()):
            # papers that arrived since the run began go first: a paper added during a long import's
            # backlog waits one batch, not the whole backlog (issue #39); the id cursor stays put for them
            limit = min(size, target - summary.embedded)
            batch = self._take(summary.model_id, "", limit, stop, wait=False, since=began)
            if not batch:
                batch = self._take(summary.model_id, after, limit, stop, wait=True)
                if not batch:
                    break  # papers were embedded by someone else meanwhile
                after = batch[-1].paper_id
            made = sentences.with_papers(batch) if sentences is not None else None
            vectors = made.vectors if made is not None else self.embedder.embed([p.text for p in batch])
            whole = self._commit(summary, batch, vectors, progress, target)
            if sentences is not None and made is not None and whole:
                sentences.save(made)  # after the vectors: search needs those, the facets these
                summary.sentences += len(made.rows)
            last_sync = self._sync_due(last_sync)
        summary.stopped = summary.embedded < target and stop is not None and stop()

    def _take(
        self,
        model_id: str,
        after: str,
        limit: int,
        stop: Callable[[], bool] | None,
        *,
        wait: bool,
        since: datetime | None = None,
    ) -> list[PendingPaper]:
        """The next batch: claimed when other processes may share the backlog, else read from it."""
        if self.claims is None:
            return self.store.backlog(model_id, after=after, limit=limit, since=since)
        return self.claims.take(model_id, after=after, limit=limit, wait=wait, stop=stop, since=since)

    def _sync_due(self, last_sync: float) -> float:
        """Save the vector index if it is due (see the module doc); returns the time of the last save."""
        now = self._clock()
        if self.open_index is None or now - last_sync < max(
            self.sync_every, SYNC_COST_RATIO * self._sync_cost
        ):
            return last_sync
        self._sync(wait=False)
        return self._clock()

    def _sync(self, *, wait: bool) -> IndexSync | None:
        """Sync the vector index; with claims, one process at a time (None: skipped, another was at it, or
        this run leaves the index to others)."""
        if not self._syncs:
            return None
        if self.claims is None:
            return self.sync_index()
        with self.claims.sync_turn(wait=wait) as held:
            return self.sync_index() if held else None

    def _embed_in(
        self,
        workers: EmbedWorkers,
        summary: IndexingSummary,
        target: int,
        size: int,
        progress: ProgressReporter | None,
        stop: Callable[[], bool] | None,
    ) -> None:
        """Batches handed to worker processes, two per worker in flight so none waits for the next; each
        finished batch committed here, in its own transaction, in the order they finish.

        Every paper is handed out once per run (the backlog is read forward from the last id handed
        out), so no paper is embedded twice into the store; a run killed anywhere keeps every committed
        batch, and the next run's backlog is exactly the papers still without a vector."""
        inflight: dict[Future[EmbeddedBatch], list[PendingPaper]] = {}
        rates: dict[int, WorkerRate] = {}
        after, handed_out, exhausted = "", 0, False
        last_sync = self._clock()
        try:
            while True:
                stopping = stop is not None and stop()
                while (
                    not (stopping or exhausted) and handed_out < target and len(inflight) < 2 * workers.size
                ):
                    limit = min(size, target - handed_out)
                    batch = self._take(summary.model_id, after, limit, stop, wait=not inflight)
                    if not batch:
                        exhausted = not inflight  # else: look again once a batch of ours is in
                        break
                    inflight[workers.submit([p.text for p in batch])] = batch
                    after, handed_out = batch[-1].paper_id, handed_out + len(batch)
                if stopping or not inflight:
                    break
                done, _ = wait(inflight, timeout=0.25, return_when=FIRST_COMPLETED)
                for future in done:
                    batch = inflight.pop(future)
                    result = future.result()
                    if result.model_id != summary.model_id:
                        raise EmbedderUnavailable(
                            f"an embedding worker made {result.model_id} vectors, but this run writes "
                            f"{summary.model_id}: is the model folder changing under the run?"
                        )
                    self._commit(summary, batch, result.vectors, progress, target)
                    rate = rates.setdefault(result.worker, WorkerRate(result.worker))
                    rate.papers += len(batch)
                    rate.busy_seconds += result.seconds
                    rate.load_seconds += result.load_seconds
                last_sync = self._sync_due(last_sync)
        finally:
            workers.close()  # batches still in flight are dropped: they stay in the backlog
            summary.workers = sorted(rates.values(), key=lambda r: r.pid)
        summary.stopped = summary.embedded < target and stop is not None and stop()

    def _commit(
        self,
        summary: IndexingSummary,
        batch: list[PendingPaper],
        vectors: Vectors,
        progress: ProgressReporter | None,
        target: int,
    ) -> bool:
        """Check one batch's vectors and commit them (one transaction), then count them; False when some
        of its papers were no longer this process's to store (their claims expired and were taken)."""
        model_id = summary.model_id
        if vectors.shape[0] != len(batch) or not np.isfinite(vectors).all():
            raise RuntimeError(
                f"embedder {model_id} returned {vectors.shape} for {count(len(batch), 'text')} "
                f"(or non-finite values) around paper {batch[0].paper_id}"
            )
        whole = True
        if self.claims is None:
            self.store.save_vectors(model_id, batch, vectors)
        else:  # only the papers still claimed by this process (the others are another's now)
            kept, vectors = self.claims.commit(model_id, batch, vectors)
            whole, batch = len(kept) == len(batch), kept
            if not batch:
                return False
        if self.marks is not self.store:  # node-local indexes elsewhere: tell them (one row's upsert)
            self.store.set_mark(self._changed(model_id), datetime.now(UTC))
        replaced = sum(1 for p in batch if p.has_vector)
        summary.embedded += len(batch)
        summary.replaced += replaced
        summary.added += len(batch) - replaced
        self.report("embedding", summary)
        if progress is not None:
            progress.update(summary.embedded, target, summary.added, summary.replaced, 0)
        return whole

    # -- the vector index ---------------------------------------------------------------------------------

    def _mark(self, model_id: str) -> str:
        return vector_index_mark(model_id)

    def _changed(self, model_id: str) -> str:
        """The store's cheap signal that vectors of ``model_id`` were written (read by followers)."""
        return f"vectors-changed:{model_id}"

    def follow_index(self) -> IndexSync | None:
        """Sync a node-local index if the store says vectors were written since the last look (one
        primary-key read when nothing changed); None when nothing had to be done.

        The first look after start always syncs: that is a node's cold start (a full build from the
        stored vectors when its index or its mark is missing).
        """
        model_id = self.embedder.model_id
        signal = self.store.get_mark(self._changed(model_id))
        if self._followed and signal == self._followed_signal:
            return None
        if self.store.newest(model_id) is None:  # nothing embedded yet: no index to build
            self._followed, self._followed_signal = True, signal
            return None
        result = self.sync_index()
        self._followed, self._followed_signal = True, signal
        return result

    def _open(self, model_id: str, dimension: int, fresh: bool) -> tuple[VectorIndex, bool]:
        assert self.open_index is not None
        if not fresh:
            try:
                index = self.open_index(model_id=model_id, dimension=dimension, fresh=False)
            except VectorIndexError:
                index = None
            if index is not None and index.manifest.model_id == model_id:
                return index, False
        return self.open_index(model_id=model_id, dimension=dimension, fresh=True), True

    def _dimension(self, model_id: str) -> int:
        """From a stored vector when there is one: asking the embedder would load its model."""
        first = next(iter(self.store.records(model_id, page=1)), None)
        return len(first[0].vector) if first else self.embedder.dimension

    def _upsert_since(self, index: VectorIndex, model_id: str, mark: datetime | None, until: datetime) -> int:
        """Upsert the vectors stored from ``mark`` up to ``until``, after the late ones before ``mark``
        (:meth:`_upsert_late`); how many were written."""
        upserted = 0 if mark is None else self._upsert_late(index, model_id, mark)
        for page in self.store.records(model_id, since=mark, until=until):
            index.upsert(page)
            upserted += len(page)
        return upserted

    def _upsert_late(self, index: VectorIndex, model_id: str, mark: datetime) -> int:
        """Upsert the vectors of the :data:`SYNC_OVERLAP` before ``mark`` that the index does not hold (a
        late commit's); those it holds are left alone (an upsert would only add a dead row to a folder
        index)."""
        upserted = 0
        for page in self.store.records(model_id, since=mark - SYNC_OVERLAP, until=mark):
            held = index.vectors([r.paper_id for r in page])
            late = [
                r
                for r in page
                if (v := held.get(r.paper_id)) is None or float(np.dot(v, r.vector)) < 1 - 1e-5
            ]
            if late:
                index.upsert(late)
                upserted += len(late)
        return upserted

    def sync_index(self, *, full: bool = False) -> IndexSync:
        """Bring the vector index up to date with the stored vectors of the current model, then save it."""
        if self.open_index is None:
            raise RuntimeError("no vector index is configured")
        started = time.perf_counter()
        try:
            return self._sync_index(full=full)
        finally:
            self._sync_cost = time.perf_counter() - started

    def _sync_index(self, *, full: bool) -> IndexSync:
        assert self.open_index is not None
        model_id = self.embedder.model_id
        mark_name = self._mark(model_id)
        # counted before the newest is read: every vector counted is then at or before it
        expected = self.store.model_counts().get(model_id, 0)
        newest = self.store.newest(model_id)
        mark = None if full else self.marks.get_mark(mark_name)
        dimension = self._dimension(model_id)
        index, fresh = self._open(model_id, dimension, fresh=full or mark is None)
        if not fresh and expected and len(index) == 0:  # synced once, holds nothing: lost, build it whole
            index, fresh = self._open(model_id, dimension, fresh=True)
        upserted = 0
        if not fresh and newest is not None and (mark is None or newest > mark):
            upserted += self._upsert_since(index, model_id, mark, newest)
        elif not fresh and mark is not None and len(index) < expected:
            upserted += self._upsert_late(index, model_id, mark)  # nothing newer, but a late commit
        if not fresh and len(index) > expected and mark is not None:
            # more than counted: another process committed between the count and the pass (a race that
            # makes the index hold more than counted): count and look once more before rebuilding
            expected = self.store.model_counts().get(model_id, 0)
            newest, since = self.store.newest(model_id), newest or mark
            if newest is not None:
                upserted += self._upsert_since(index, model_id, since, newest)
        if not fresh and len(index) != expected:  # drifted: rebuild from stored vectors (no re-embedding)
            index, fresh = self._open(model_id, dimension, fresh=True)
            upserted = 0
        if fresh and newest is not None:
            for page in self.store.records(model_id, until=newest):
                index.upsert(page)
                upserted += len(page)
        if fresh or upserted:
            index.save()
            self.marks.set_mark(mark_name, newest)
        return IndexSync("full" if fresh else "incremental", len(index), upserted)
