"""What /admin/jobs says about indexing: the embedding counts next to the newest indexer report.

Counting the backlog joins the papers with their vectors (a second or so at 700,000 papers): fine for an
administrator's page, not for every search (``services/coverage.py`` keeps the cheap, cached counts).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from paperfeed.domain.embedding import EmbeddingStore
from paperfeed.domain.indexing_status import (
    IndexerReport,
    IndexerReportReader,
    IndexerReports,
    IndexingStatus,
)
from paperfeed.domain.search import EmbedderSource, VectorSource

__all__ = ["IndexerActivity", "IndexingStatusService"]


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
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

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
        )
