"""Filling the paper graph: ask the citation sources about the store's papers (issue #16).

For each source (Semantic Scholar, OpenAlex) the papers *due* (see :mod:`paperfeed.domain.citation_harvest`)
are asked in batches of ``batch_size``; each batch's answers are saved with
:meth:`~paperfeed.domain.paper_graph.CitationRecords.save_links` in one transaction together with the
checkpoint ``citations:<source>`` (papers done / planned). A kill -9 therefore loses at most the batch in
flight; a rerun skips the papers already saved (their harvest is fresh in the ledger) and says it is
resuming while the checkpoint is there. The checkpoint is cleared when a source's plan is done.

Offline — :class:`~paperfeed.domain.errors.SourceUnavailable` before the first batch is saved — the
report says so and nothing was changed. A source failing later (offline, 5xx storm, a malformed answer)
stops that source's harvest; what was saved stays, and the next run goes on from there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime

from paperfeed.domain.citation_harvest import (
    HarvestPlan,
    HarvestReport,
    HarvestSettings,
    PublishedPapers,
    arxiv_only,
    due,
)
from paperfeed.domain.errors import SourceAnswerError, SourceUnavailable
from paperfeed.domain.paper_graph import CitationRecords, CitationSource
from paperfeed.domain.ports import PaperStore, ProgressReporter

__all__ = ["CitationHarvest", "UnknownPapers", "checkpoint_name"]


def checkpoint_name(source: str) -> str:
    return f"citations:{source}"


def _utc_now() -> datetime:
    return datetime.now(UTC)


class UnknownPapers(ValueError):
    """Ids given to harvest that are not arXiv ids or not papers of the store; the message lists them."""


@dataclass
class CitationHarvest:
    """Harvests references and citations of the store's papers from the configured sources."""

    records: CitationRecords
    store: PaperStore
    published: PublishedPapers
    sources: Mapping[str, Callable[[], CitationSource]]  # name -> builder ("s2", "openalex")
    settings: HarvestSettings
    now: Callable[[], datetime] = _utc_now

    def candidates(
        self, ids: Sequence[str] = (), *, since: date | None = None, refresh: bool = False
    ) -> list[str]:
        """The store's arXiv papers to consider: ``ids`` (each must be one), else those published since
        ``since``, else (``refresh``) those published within the refresh window."""
        if ids:
            good, bad = arxiv_only(ids)
            if bad:
                raise UnknownPapers(f"not arXiv ids: {', '.join(repr(b[:40]) for b in bad[:10])}")
            held = self.store.get_papers(good)
            missing = [p for p in good if p not in held]
            if missing:
                more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
                raise UnknownPapers(f"not papers of this instance: {', '.join(missing[:10])}{more}")
            return good
        if since is None:
            if not refresh:
                raise ValueError("give paper ids, a date to harvest papers published since, or refresh")
            since = (self.now() - self.settings.refresh_window).date()
        return arxiv_only(self.published.published_since(since))[0]

    def plan(
        self, source: str, candidates: Sequence[str], *, refresh: bool, limit: int | None = None
    ) -> HarvestPlan:
        """The candidates due from ``source``: never asked, or asked longer ago than the mode allows."""
        if source not in self.sources:
            raise ValueError(f"unknown citation source {source!r} (known: {', '.join(self.sources)})")
        max_age = self.settings.refresh_after if refresh else self.settings.fresh_for
        todo = due(candidates, self.records.harvested(candidates, source), now=self.now(), max_age=max_age)
        if limit is not None:
            todo = todo[:limit]
        return HarvestPlan(source, tuple(todo), skipped=len(candidates) - len(todo))

    def run(self, plan: HarvestPlan, progress: ProgressReporter) -> HarvestReport:
        """Ask ``plan.source`` about the planned papers, batch by batch, each saved with its checkpoint."""
        report = HarvestReport(plan.source, planned=len(plan.due), skipped=plan.skipped)
        name = checkpoint_name(plan.source)
        report.resumed = self.store.get_checkpoint(name) is not None
        progress.update(0, len(plan.due), 0, 0, 0)
        if not plan.due:
            self.store.clear_checkpoint(name)
            return report
        source = self.sources[plan.source]()
        size = self.settings.batch_size
        for first in range(0, len(plan.due), size):
            chunk = plan.due[first : first + size]
            try:
                answers = list(source.links(chunk, max_citations=self.settings.max_citations))
            except (SourceUnavailable, SourceAnswerError) as exc:
                report.error = str(exc)
                report.unreachable = isinstance(exc, SourceUnavailable)
                report.offline = report.unreachable and report.papers == 0
                return report
            done = first + len(chunk)
            saved = self.records.save_links(
                answers, harvested_at=self.now(), checkpoint=(name, f"{done}/{len(plan.due)}")
            )
            report.papers += len(answers)
            report.edges_added += saved.edges_added
            report.works_added += saved.works_added
            for links in answers:
                report.unknown += links.work is None
                report.unkeyed += links.unkeyed
                report.cut += links.work is not None and not links.citations_complete
            progress.update(
                done, len(plan.due), report.edges_added, report.papers - report.unknown, report.unknown
            )
        self.store.clear_checkpoint(name)
        return report

    def harvest(
        self,
        sources: Sequence[str],
        candidates: Sequence[str],
        *,
        refresh: bool,
        progress: Callable[[HarvestPlan], ProgressReporter],
        limit: int | None = None,
    ) -> list[HarvestReport]:
        """Every source in turn (one offline does not stop the next)."""
        reports = []
        for name in sources:
            plan = self.plan(name, candidates, refresh=refresh, limit=limit)
            reports.append(self.run(plan, progress(plan)))
        return reports

    def daily(
        self, sources: Sequence[str], progress: Callable[[HarvestPlan], ProgressReporter]
    ) -> list[HarvestReport]:
        """The daily job's step: papers of the refresh window never asked, then those due a refresh,
        at most ``daily_max`` per source."""
        candidates = self.candidates(refresh=True)
        return self.harvest(
            sources, candidates, refresh=True, progress=progress, limit=self.settings.daily_max
        )
