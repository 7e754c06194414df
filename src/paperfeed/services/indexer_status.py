"""What /admin/jobs says about indexing: the embedding counts next to the newest indexer report.

Counting the backlog joins the papers with their vectors (a second or so at 700,000 papers): fine for an
administrator's page, not for every search (``services/coverage.py`` keeps the cheap, cached counts).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from paperfeed.domain.embedding import EmbeddingStore
from paperfeed.domain.indexing_status import IndexerReports, IndexingStatus

__all__ = ["IndexingStatusService"]


@dataclass
class IndexingStatusService:
    """``model_id``: the configured embedding model (the embedder's id, read without loading it);
    ``indexed``: papers in the vector index search reads (None: unreadable); ``is_dead``: whether the
    process named by a holder (``host:pid:start``) is gone."""

    store: EmbeddingStore
    reports: IndexerReports
    model_id: Callable[[], str]
    indexed: Callable[[], int | None]
    is_dead: Callable[[str], bool]
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    def status(self) -> IndexingStatus:
        model = self.model_id()
        others = {m: n for m, n in self.store.model_counts().items() if m != model}
        report = self.reports.indexer_report()
        alive = report is not None and not self.is_dead(report.holder)
        return IndexingStatus(
            model_id=model,
            papers=self.store.count_papers(),
            backlog=self.store.count_backlog(model),
            indexed=self.indexed(),
            report=report,
            alive=alive,
            now=self.clock(),
            other_models=others,
        )
