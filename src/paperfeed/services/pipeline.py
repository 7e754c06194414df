"""The daily pipeline's steps: harvest Hugging Face and arXiv, index, send digests.

Jobs (run by :class:`~paperfeed.services.jobs.JobService`, on time by its scheduler):

- ``daily``: the configured steps in order — ``harvest-hf`` (every Hugging Face day of the window not
  complete yet: today, yesterday and any day missed while the instance was down; see
  :mod:`paperfeed.services.fill`), ``harvest-listings`` (the newest arXiv submissions of the followed
  categories since the last pass, through the arXiv API), ``harvest-arxiv`` (OAI-PMH, from where the
  last harvest ended; not a default step), ``harvest-citations`` (references and citations of the
  papers published in the refresh window: new ones first, then those due a refresh of their cited-by
  lists, at most ``PAPERFEED_CITATIONS_DAILY_MAX`` per source; see :mod:`paperfeed.services.citations`.
  Offline it reports so in its counts and the job moves on), ``index`` (embed the backlog, refresh the
  vector index), ``topics`` (place the newly embedded papers into their nearest topic; rebuild the topics
  when the last build is ``PAPERFEED_TOPICS_REBUILD_DAYS`` old; see :mod:`paperfeed.services.topics`),
  ``digests`` (compose and send due digests).

Why the API listings and not OAI-PMH by default: OAI-PMH sets are whole archives (``cs``, ``math``), not
the categories an instance follows, and a first OAI harvest without a high-water mark is all of arXiv
(millions of records) — right for a mirror that sets ``PAPERFEED_JOBS_ARXIV_SET`` and adds the step,
wrong for a laptop. The listings read only the followed categories' new submissions and resume from
where the last pass ended, so a missed day is caught up by the next run like the Daily Papers are.
- ``digests``: only the last step; the scheduler runs it every hour, since subscribers choose local hours.

Every collaborator is passed as a callable, so a step builds (and loads) only what it uses; the sources
come from the composition root, so this module knows no adapter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from paperfeed.domain.fill import SilentReporter
from paperfeed.domain.ingest import IngestSummary
from paperfeed.domain.ports import PaperSource
from paperfeed.services.jobs import Step, StepCounts

if TYPE_CHECKING:
    from paperfeed.services.citations import CitationHarvest
    from paperfeed.services.digest_send import DigestService
    from paperfeed.services.embedders import Indexer
    from paperfeed.services.fill import FillService
    from paperfeed.services.ingest import IngestService

__all__ = ["STEP_NAMES", "DailyPipeline"]

STEP_NAMES = (
    "harvest-arxiv",
    "harvest-hf",
    "harvest-listings",
    "harvest-citations",
    "index",
    "topics",
    "digests",
)


class _Quiet:
    """A :class:`~paperfeed.domain.ports.ProgressReporter` for the scheduler: the run's counts suffice."""

    def update(self, position: int, total: int | None, added: int, updated: int, rejected: int) -> None:
        return None


def _ingested(summary: IngestSummary) -> StepCounts:
    return {"added": summary.added, "updated": summary.updated, "rejected": summary.rejected}


@dataclass
class DailyPipeline:
    """The steps of this instance's jobs, each an idempotent call into a service."""

    ingest: IngestService
    arxiv_harvest: Callable[[], PaperSource]  # a harvest planned per run: from where the last one ended
    fill: FillService  # the window's Hugging Face days and arXiv category listings
    indexer: Indexer  # embedding with the model in use
    digests: DigestService
    daily_steps: Sequence[str]  # PAPERFEED_JOBS_DAILY_STEPS
    citation_sources: Sequence[str]  # PAPERFEED_CITATION_SOURCES
    citations: CitationHarvest | None = None
    # the topics step (TopicService.daily, in a child process for a background process: bootstrap)
    topics_daily: Callable[[Callable[[str], None] | None], StepCounts] | None = None

    def harvest_arxiv(self) -> StepCounts:
        return _ingested(self.ingest.run(self.arxiv_harvest(), resume=True))

    def harvest_hf(self) -> StepCounts:
        """Every day of the window not complete yet (a missed day is caught up here)."""
        out = self.fill.catch_up_hf(SilentReporter())
        return {**_ingested(out.summary), "days": len(out.fetched)}

    def harvest_listings(self) -> StepCounts:
        """The followed categories' newest arXiv submissions; a category arXiv refuses fails the step
        (after the others ran), so the run shows as partial with arXiv's own message."""
        out = self.fill.catch_up_arxiv(SilentReporter())
        if out.refused:
            raise RuntimeError("; ".join(f"arXiv refused {cat}: {why}" for cat, why in out.refused))
        return {**_ingested(out.summary), "categories": len(out.fetched), "fresh": len(out.fresh)}

    def harvest_citations(self) -> StepCounts:
        """New and recent papers' references and citations from each source. A source that cannot be
        reached is reported in the counts (``<source>_offline``) and the job goes on; a source that
        answers with something malformed fails the step after the others ran."""
        if self.citations is None:
            raise RuntimeError("no citation harvest is configured")
        reports = self.citations.daily(self.citation_sources, lambda _plan: _Quiet())
        counts: dict[str, int | float | str] = {}
        failed: list[str] = []
        for r in reports:
            counts.update(
                {
                    f"{r.source}_papers": r.papers,
                    f"{r.source}_edges": r.edges_added,
                    f"{r.source}_due": r.planned,
                }
            )
            if r.error is not None and r.unreachable:
                counts[f"{r.source}_offline"] = r.error[:300]
            elif r.error is not None:
                failed.append(f"{r.source}: {r.error}")
        if failed:
            raise RuntimeError("; ".join(failed))
        return counts

    def index(self) -> StepCounts:
        """Embed the backlog; with nothing new, a few counts (no model is loaded, no backend calibrated)."""
        if self.indexer.nothing_to_do():
            return {"embedded": 0, "remaining": 0}
        summary = self.indexer.current().run()
        return {"embedded": summary.embedded, "remaining": summary.remaining}

    def topics(self, report: Callable[[str], None] | None = None) -> StepCounts:
        """Place newly embedded papers into the topics; rebuild them when due (``TopicService.daily``)."""
        if self.topics_daily is None:
            raise RuntimeError("no topic service is configured")
        return self.topics_daily(report)

    def send_digests(self) -> StepCounts:
        composed, sent = self.digests.run()
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
            "harvest-listings": self.harvest_listings,
            "harvest-citations": self.harvest_citations,
            "index": self.index,
            "topics": self.topics,
            "digests": self.send_digests,
        }
        return Step(name, runs[name])

    def jobs(self) -> dict[str, Callable[[], list[Step]]]:
        """The jobs, each a list of steps built when it runs: ``daily``, ``digests`` and ``topics`` (what
        ``paperfeed run``'s indexer runs once it has embedded newly arrived papers)."""

        def steps(names: Sequence[str]) -> Callable[[], list[Step]]:
            return lambda: [self.step(n) for n in names]

        return {
            "daily": steps(list(self.daily_steps)),
            "digests": steps(["digests"]),
            "topics": steps(["topics"]),
        }
