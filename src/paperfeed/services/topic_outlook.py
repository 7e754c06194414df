"""What /topics and /map say before the first topics build: when the running instance will build them.

Gathers the facts of :class:`~paperfeed.domain.topic_outlook.TopicsOutlook` -- papers and vectors, the
indexer's last report, whether a topics build or a scheduler holds its lease, the daily job's next hour,
the last topics run's error -- by reads only (a page asks, nothing changes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from paperfeed.domain.embedding import EmbeddingStore
from paperfeed.domain.indexing_status import IndexerWatch
from paperfeed.domain.topic_outlook import TopicsOutlook

from .jobs import JobSchedule, JobService

__all__ = ["TopicOutlookService"]


@dataclass
class TopicOutlookService:
    """``needed``: ``PAPERFEED_TOPICS_MIN_PAPERS``; ``daily``: when the scheduler runs the daily job."""

    embeddings: EmbeddingStore
    indexer: IndexerWatch
    jobs: JobService
    needed: int
    daily: JobSchedule
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    def outlook(self) -> TopicsOutlook:
        now = self.clock()
        counts = self.embeddings.model_counts()
        scheduler = self.jobs.held_by_a_live_process("scheduler")
        last = self.jobs.last_run("topics")
        failed = last.error if last is not None and last.status == "failed" else None
        return TopicsOutlook(
            papers=self.embeddings.count_papers(),
            embedded=max(counts.values(), default=0),  # the model topics are built from: the most used one
            needed=self.needed,
            indexer=self.indexer.activity(),
            building=self.jobs.held_by_a_live_process("job:topics"),
            daily_at=self.daily.next_after(now) if scheduler else None,
            now=now,
            failed=failed,
        )
