"""What /admin/jobs says about indexing: the embedding counts next to the newest indexer report.

Counting the backlog joins the papers with their vectors (a second or so at 700,000 papers): fine for an
administrator's page, not for every search (``services/coverage.py`` keeps the cheap, cached counts).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from paperfeed.domain.embedding import EmbeddingStore
from paperfeed.domain.indexing_status import (
    WORKING,
    IndexerReport,
    IndexerReportReader,
    IndexerReports,
    IndexerState,
    IndexingStatus,
    RateWindow,
    SentenceCounts,
)
from paperfeed.domain.search import EmbedderSource, VectorSource
from paperfeed.domain.sentences import RoleModels, SentenceStore, sentence_model_id
from paperfeed.domain.summaries import SUMMARY_RULE

__all__ = ["RATE_WINDOW", "IndexerActivity", "IndexerReporter", "IndexingStatusService"]

log = logging.getLogger(__name__)

RATE_WINDOW = 120.0  # seconds of recent progress the time-left estimate's rate is measured over


@dataclass(frozen=True)
class IndexerActivity:
    """The indexer at work, if one runs: its newest report, when its process is alive and it did not
    stop (what the coverage notice says it is doing, issue #30 item 12). ``is_dead``: whether the
    process named by a holder (``host:pid:start``) is gone."""

    reports: IndexerReportReader
    is_dead: Callable[[str], bool]

    def activity(self) -> IndexerReport | None:
        report = self.reports.indexer_report()
        if report is None or report.state == "stopped" or self.is_dead(report.holder):
            return None
        return report


@dataclass
class IndexingStatusService:
    """``embedder``: the embedder in use (its model id is read without loading it); ``vectors``: the
    vector index search reads (its count None: unreadable); ``is_dead``: whether the process named by a
    holder (``host:pid:start``) is gone."""

    store: EmbeddingStore
    reports: IndexerReports
    embedder: EmbedderSource
    vectors: VectorSource
    is_dead: Callable[[str], bool]
    sentences: SentenceStore | None = None  # the second pass's store (None: its line is left out)
    roles: RoleModels | None = None  # the sentence-role models: the backlog is counted against the current
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    def sentence_counts(self, model: str) -> SentenceCounts | None:
        """How far the papers' sentences are for the embedding model ``model`` (what ``SentencePlan``
        counts, without making the sentence indexer, which would resolve the embedder): the rows are of
        its sentence vectors' space, the role model is its own."""
        if self.sentences is None:
            return None
        found = self.roles.current(model) if self.roles is not None else None
        role_model = found.model_id if found is not None else ""
        rows = sentence_model_id(model)
        return SentenceCounts(
            self.sentences.count_done(rows),
            self.sentences.count_backlog(rows, role_model),
            self.sentences.count_summary_backlog(rows, SUMMARY_RULE.rule_id),
        )

    def status(self) -> IndexingStatus:
        model = self.embedder.current().model_id
        others = {m: n for m, n in self.store.model_counts().items() if m != model}
        report = self.reports.indexer_report()
        alive = report is not None and not self.is_dead(report.holder)
        return IndexingStatus(
            model_id=model,
            papers=self.store.count_papers(),
            backlog=self.store.count_backlog(model),
            indexed=self.vectors.count(),
            report=report,
            alive=alive,
            now=self.clock(),
            other_models=others,
            sentences=self.sentence_counts(model),
        )


class IndexerReporter:
    """What this process says of its indexing work (``reports``: the store, read by /admin/jobs, ``jobs
    status`` and the search's coverage notice): its phase (IndexerState), the papers it did in it, the
    papers left, and the rate of its recent progress, one :class:`RateWindow` per phase.

    A report is written at most every ``every`` seconds, at once when the phase changes or ``force`` is
    given; one that cannot be written is logged, never raised: it must not stop the work."""

    def __init__(
        self,
        reports: IndexerReports,
        *,
        every: float,
        window: float = RATE_WINDOW,
        clock: Callable[[], float] = time.monotonic,
        identity: Callable[[], str] | None = None,
    ) -> None:
        self.reports = reports
        self.every = every
        self._clock = clock
        self._identity = identity
        self._windows = {state: RateWindow(window) for state in WORKING}
        self._state: IndexerState | None = None
        self._done = 0
        self._began = clock()  # when the current phase began
        self._last_rate: float | None = None  # the rate of the last working phase, for the report ending it
        self._reported = float("-inf")

    def rate(self, state: IndexerState) -> float | None:
        window = self._windows.get(state)
        return window.rate() if window is not None else None

    def report(
        self,
        state: IndexerState,
        *,
        done: int = 0,
        remaining: int = 0,
        sentences_left: int | None = None,
        force: bool = False,
    ) -> None:
        """``done``: papers of this phase done so far in the current run (it counts up within a run and
        starts at 0 with the next); ``remaining``: papers without a vector; ``sentences_left``: papers
        whose sentences are still to make (None: not counted)."""
        now = self._clock()
        window = self._windows.get(state)
        if state != self._state:
            ended = self._windows.get(self._state) if self._state is not None else None
            if ended is not None:  # the phase that ends: its recent rate, else its average
                elapsed = now - self._began
                average = done / elapsed if window is None and done and elapsed > 0 else None
                self._last_rate = ended.rate() or average
            if window is not None:
                window.restart()
            self._state, self._done, self._began, force = state, 0, now, True
        if window is not None:
            if done < self._done:  # a new run of the same phase: its count starts again
                self._done = 0
            if done > self._done:  # progress: the first since the phase began is the window's anchor
                window.add(now, done - self._done)
            self._done = done
        if not force and now - self._reported < self.every:
            return
        self._reported = now
        from paperfeed.services.jobs import process_identity

        holder = (self._identity or process_identity)()
        rate = window.rate() if window is not None else self._last_rate
        found = IndexerReport(holder, state, done, remaining, rate, datetime.now(UTC), sentences_left)
        try:
            self.reports.report_indexer(found)
        except Exception as exc:
            log.warning("could not record the indexer's progress: %s", exc)
