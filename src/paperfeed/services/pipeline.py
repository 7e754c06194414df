"""The daily pipeline's steps: harvest arXiv, harvest Hugging Face, index, send digests.

Jobs (run by :class:`~paperfeed.services.jobs.JobService`, on time by its scheduler):

- ``daily``: the configured steps in order — ``harvest-arxiv`` (OAI-PMH, from where the last harvest
  ended), ``harvest-hf`` (Hugging Face Daily Papers of yesterday and today, UTC), ``index`` (embed the
  backlog, refresh the vector index), ``digests`` (compose and send due digests).
- ``digests``: only the last step; the scheduler runs it every hour, since subscribers choose local hours.

Every collaborator is passed as a callable, so a step builds (and loads) only what it uses; the sources
come from the composition root, so this module knows no adapter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING

from paperfeed.domain.ingest import IngestSummary
from paperfeed.domain.ports import PaperSource
from paperfeed.services.jobs import Step, StepCounts

if TYPE_CHECKING:
    from paperfeed.services.digest_send import DigestService
    from paperfeed.services.indexing import IndexingService
    from paperfeed.services.ingest import IngestService

__all__ = ["STEP_NAMES", "DailyPipeline"]

STEP_NAMES = ("harvest-arxiv", "harvest-hf", "index", "digests")


def _ingested(summary: IngestSummary) -> StepCounts:
    return {"added": summary.added, "updated": summary.updated, "rejected": summary.rejected}


@dataclass
class DailyPipeline:
    """The steps of this instance's jobs, each an idempotent call into a service."""

    ingest: Callable[[], IngestService]
    arxiv_harvest: Callable[[], PaperSource]  # continues from where the last completed harvest ended
    hf_days: Callable[[date, date], PaperSource]  # Hugging Face Daily Papers of an inclusive day range
    clear_checkpoint: Callable[[str], None]
    indexing: Callable[[], IndexingService]
    digests: Callable[[], DigestService]
    daily_steps: Sequence[str] = STEP_NAMES
    today: Callable[[], date] = field(default=lambda: datetime.now(UTC).date())

    def harvest_arxiv(self) -> StepCounts:
        return _ingested(self.ingest().run(self.arxiv_harvest(), resume=True))

    def harvest_hf(self) -> StepCounts:
        today = self.today()
        source = self.hf_days(today - timedelta(days=1), today)
        summary = self.ingest().run(source)
        if source.checkpoint_name:
            self.clear_checkpoint(source.checkpoint_name)  # a finished range is harvested afresh next time
        return _ingested(summary)

    def index(self) -> StepCounts:
        summary = self.indexing().run()
        return {"embedded": summary.embedded, "remaining": summary.remaining}

    def send_digests(self) -> StepCounts:
        composed, sent = self.digests().run()
        counts: dict[str, int | float | str] = {"composed": composed.composed, "empty": composed.empty}
        if sent is not None:
            counts.update(sent=sent.sent, retry=sent.retry_later, bounced=sent.bounced, failed=sent.failed)
            if sent.stopped:
                raise RuntimeError(f"sending stopped: {sent.stopped}")
        return counts

    def step(self, name: str) -> Step:
        """The step called ``name`` (one of :data:`STEP_NAMES`)."""
        runs: dict[str, Callable[[], StepCounts]] = {
            "harvest-arxiv": self.harvest_arxiv,
            "harvest-hf": self.harvest_hf,
            "index": self.index,
            "digests": self.send_digests,
        }
        return Step(name, runs[name])

    def jobs(self) -> dict[str, Callable[[], list[Step]]]:
        """The jobs, each a list of steps built when it runs: ``daily`` and ``digests``."""

        def steps(names: Sequence[str]) -> Callable[[], list[Step]]:
            return lambda: [self.step(n) for n in names]

        return {"daily": steps(list(self.daily_steps)), "digests": steps(["digests"])}
