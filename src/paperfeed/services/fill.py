"""Fill a window of recent papers on first start, and catch up missed days afterwards.

Two stages, each resumable and idempotent (the rules are in :mod:`paperfeed.domain.fill`):

- **Hugging Face days**: every day of the window that is not complete yet — on a first start all of
  them, later only today, yesterday and the days missed while the instance was down — newest first,
  one day per transaction with its completion mark.
- **arXiv categories**: the newest submissions of each followed category (configured, or derived once
  from the window's Daily Papers) through the arXiv API, back to the window's start or to where the
  last pass ended; a category whose last pass completed today (UTC) is not asked again.

``fill`` runs both for a person waiting at a terminal: the first request (today's Daily Papers) goes
through a probe that tries once within a short timeout, so an offline start gives up at once; failures
come back in the :class:`FillReport`, never as exceptions. The daily job calls the stages directly and
lets a source's failure fail its step. This module knows no adapter: sources come as callables from
the composition root.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING

from paperfeed.domain.errors import SourceAnswerError, SourceUnavailable
from paperfeed.domain.fill import (
    CATEGORIES_KEY,
    FillReporter,
    FillSources,
    ListingState,
    decode_categories,
    encode_categories,
    hf_day_key,
    is_settled,
    listing_key,
    top_categories,
    window_days,
)
from paperfeed.domain.ingest import Batch, IngestSummary
from paperfeed.domain.ports import PaperSource, PaperStore
from paperfeed.domain.wording import count

if TYPE_CHECKING:
    from paperfeed.services.ingest import IngestService

__all__ = ["ArxivOutcome", "FillReport", "FillService", "FillSettings", "HfOutcome"]

HF_STAGE = "Hugging Face days"
ARXIV_STAGE = "arXiv categories"


@dataclass(frozen=True)
class FillSettings:
    """The window and what fills it (``PAPERFEED_FILL_DAYS``, ``PAPERFEED_ARXIV_*``)."""

    days: int
    categories: tuple[str, ...]  # empty: derive them from the window's Daily Papers
    listing_max: int  # newest submissions read per category and pass, at most
    derive_sample: int = 100  # most-upvoted Daily Papers of the window asked about: one API request
    derive_limit: int = 5  # categories derived, at most
    rederive_after: timedelta = timedelta(days=7)


@dataclass
class HfOutcome:
    fetched: list[date] = field(default_factory=list)  # days requested this time, in order
    complete_before: int = 0  # days of the window already complete (not asked again)
    summary: IngestSummary = field(default_factory=IngestSummary)


@dataclass
class ArxivOutcome:
    categories: tuple[str, ...] = ()
    how: str = ""  # "configured", "derived from N Daily Papers", "derived on <day>", or why there are none
    fetched: list[str] = field(default_factory=list)
    fresh: list[str] = field(default_factory=list)  # completed today already: not asked
    refused: list[tuple[str, str]] = field(default_factory=list)  # (category, arXiv's answer)
    summary: IngestSummary = field(default_factory=IngestSummary)


@dataclass
class FillReport:
    """What a fill did; ``offline`` (the probe failed) or ``stopped`` say why it ended early."""

    hf: HfOutcome = field(default_factory=HfOutcome)
    arxiv: ArxivOutcome = field(default_factory=ArxivOutcome)
    offline: str | None = None
    stopped: list[str] = field(default_factory=list)

    @property
    def added(self) -> int:
        return self.hf.summary.added + self.arxiv.summary.added

    @property
    def updated(self) -> int:
        return self.hf.summary.updated + self.arxiv.summary.updated


@dataclass
class _Marked:
    """A source whose last batch also writes ``mark`` (a checkpoint): data and mark commit together."""

    inner: PaperSource
    mark: tuple[str, str] | None

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def checkpoint_name(self) -> str | None:
        return None

    def batches(self, resume_from: str | None = None) -> Iterator[Batch]:
        held: Batch | None = None
        for batch in self.inner.batches(None):
            if held is not None:
                yield held
            held = batch
        if held is None:
            held = Batch()
        # A day the source could not read at all (a reject and nothing listed) is not complete.
        if self.mark is not None and (held.listings or not held.rejects):
            held.checkpoint = self.mark
        yield held


@dataclass
class _Watched:
    """A source passed through unchanged, noting the primary category of every paper it yields."""

    inner: PaperSource
    primaries: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def checkpoint_name(self) -> str | None:
        return self.inner.checkpoint_name

    def batches(self, resume_from: str | None = None) -> Iterator[Batch]:
        for batch in self.inner.batches(resume_from):
            self.primaries.extend(p.categories[0] for p in batch.papers if p.categories)
            yield batch


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class FillService:
    """Fills the window and catches up what is missing (see the module docstring)."""

    store: PaperStore
    ingest: IngestService
    sources: FillSources  # Hugging Face days, arXiv papers by id and category listings
    settings: FillSettings
    now: Callable[[], datetime] = _utc_now

    # -- the window ----------------------------------------------------------------------------------

    def today(self) -> date:
        return self.now().astimezone(UTC).date()

    def window_start(self) -> datetime:
        """Midnight UTC of the window's first day: older arXiv submissions are not fetched."""
        first = self.today() - timedelta(days=self.settings.days - 1)
        return datetime.combine(first, time(), UTC)

    def hf_days_to_fetch(self) -> tuple[list[date], int]:
        """The window's days still to fetch, newest first, and how many are complete already."""
        today = self.today()
        todo: list[date] = []
        complete = 0
        for day in window_days(today, self.settings.days):
            if is_settled(day, today) and self.store.get_checkpoint(hf_day_key(day)) is not None:
                complete += 1
            else:
                todo.append(day)
        return todo, complete

    # -- stage 1: Hugging Face days ------------------------------------------------------------------

    def catch_up_hf(self, reporter: FillReporter, *, probe_timeout: float | None = None) -> HfOutcome:
        """Fetch every day of the window not complete yet. Raises :class:`SourceUnavailable` when
        Hugging Face cannot be reached; days already committed stay (and are not fetched again)."""
        return self._catch_up_hf(reporter, HfOutcome(), probe_timeout)

    def _catch_up_hf(self, reporter: FillReporter, out: HfOutcome, probe_timeout: float | None) -> HfOutcome:
        today = self.today()
        todo, out.complete_before = self.hf_days_to_fetch()
        begun = probe_timeout is None  # else after the probe answered: offline says one thing only
        if begun:
            reporter.begin(HF_STAGE, len(todo))
        for done, day in enumerate(todo, 1):
            mark = (hf_day_key(day), self.now().isoformat()) if is_settled(day, today) else None
            opened: AbstractContextManager[PaperSource]
            if probe_timeout is not None and done == 1:  # the first request tells whether we are online
                opened = self.sources.hf_probe(day, probe_timeout)
            else:
                opened = nullcontext(self.sources.hf_day(day))
            before = out.summary.listings
            with opened as source:
                self.ingest.run(_Marked(source, mark), summary=out.summary)
            out.fetched.append(day)
            if not begun:
                reporter.begin(HF_STAGE, len(todo))
                begun = True
            reporter.advance(HF_STAGE, done, f"{day}: {count(out.summary.listings - before, 'paper')}")
        return out

    # -- stage 2: arXiv categories -------------------------------------------------------------------

    def _window_hf_ids(self) -> list[str]:
        """The window's most-upvoted Daily Papers (at most ``derive_sample``)."""
        source = self.sources.hf_day(self.today()).name
        best: dict[str, int] = {}
        for day in window_days(self.today(), self.settings.days):
            for item in self.store.listings_for_day(day, source):
                best[item.paper_id] = max(best.get(item.paper_id, -1), item.upvotes or 0)
        ranked = sorted(best, key=lambda pid: (-best[pid], pid))
        return ranked[: self.settings.derive_sample]

    def categories(self, reporter: FillReporter) -> tuple[tuple[str, ...], str]:
        """The categories this instance follows, and how they were chosen.

        Configured ones win. Otherwise the primary categories of the window's most-upvoted Daily Papers
        (one arXiv API request for up to ``derive_sample`` ids, which also stores arXiv's metadata for
        them), the most frequent first; derived once and kept for ``rederive_after``.
        """
        s = self.settings
        if s.categories:
            return s.categories, "configured"
        stored, derived_at = decode_categories(self.store.get_checkpoint(CATEGORIES_KEY))
        if stored and derived_at is not None and self.now() - derived_at < s.rederive_after:
            return stored, f"derived on {derived_at:%Y-%m-%d} from the Daily Papers"
        ids = self._window_hf_ids()
        if not ids:
            how = (
                "none yet: no Daily Papers in the window to derive them from; set PAPERFEED_ARXIV_CATEGORIES"
            )
            return stored, how if not stored else "derived earlier (no Daily Papers to refresh them)"
        asked = _Watched(self.sources.arxiv_papers().papers(ids))
        try:
            self.ingest.run(asked)
        except (SourceUnavailable, SourceAnswerError) as exc:
            reporter.note(f"could not ask arXiv for the Daily Papers' categories: {exc}")
            if stored:
                return stored, "derived earlier (arXiv could not be asked again)"
            raise
        chosen = tuple(top_categories(asked.primaries, limit=s.derive_limit))
        if not chosen:
            return stored, "none: arXiv knew none of the window's Daily Papers"
        self.store.apply_batch(
            Batch(checkpoint=(CATEGORIES_KEY, encode_categories(chosen, self.now(), len(ids))))
        )
        return chosen, f"derived from {len(asked.primaries)} of the window's Daily Papers"

    def listing_is_fresh(self, category: str) -> bool:
        """A pass for ``category`` completed today (UTC): arXiv announces once a day, nothing is new."""
        state = ListingState.loads(self.store.get_checkpoint(listing_key(category)))
        midnight = datetime.combine(self.today(), time(), UTC)
        return not state.in_progress and state.completed_at is not None and state.completed_at >= midnight

    def catch_up_arxiv(self, reporter: FillReporter) -> ArxivOutcome:
        """Harvest the newest submissions of each followed category not yet harvested today.

        A category arXiv refuses (its error feed, e.g. an unknown category) is reported in ``refused``
        and the others go on; :class:`SourceUnavailable` stops the stage (committed pages stay).
        """
        return self._catch_up_arxiv(reporter, ArxivOutcome())

    def _catch_up_arxiv(self, reporter: FillReporter, out: ArxivOutcome) -> ArxivOutcome:
        try:
            out.categories, out.how = self.categories(reporter)
        except SourceAnswerError as exc:
            out.how = f"none: arXiv refused the question about the Daily Papers' categories ({exc})"
            return out
        if not out.categories:
            reporter.note(f"no arXiv categories to follow ({out.how})")
            return out
        since = self.window_start()
        todo: list[str] = []
        for category in out.categories:
            (out.fresh if self.listing_is_fresh(category) else todo).append(category)
        reporter.begin(ARXIV_STAGE, len(todo))
        for done, category in enumerate(todo, 1):
            before = out.summary.added + out.summary.updated + out.summary.unchanged
            try:
                self.ingest.run(
                    self.sources.arxiv_listing(category, since, self.settings.listing_max, self.now),
                    summary=out.summary,
                )
            except SourceAnswerError as exc:
                out.refused.append((category, str(exc)))
                reporter.note(f"arXiv refused the listing of {category}: {exc}")
                reporter.advance(ARXIV_STAGE, done, f"{category}: refused")
                continue
            out.fetched.append(category)
            got = out.summary.added + out.summary.updated + out.summary.unchanged - before
            reporter.advance(ARXIV_STAGE, done, f"{category}: {count(got, 'paper')}")
        return out

    # -- both, for a person at a terminal ------------------------------------------------------------

    def fill(self, reporter: FillReporter, *, probe_timeout: float | None = None) -> FillReport:
        """Fill the window (first start) or catch up what is missing (later starts); never raises for
        an unreachable or refusing source: the report says what happened."""
        report = FillReport()
        try:
            self._catch_up_hf(reporter, report.hf, probe_timeout)
        except SourceUnavailable as exc:
            if not report.hf.fetched and probe_timeout is not None:
                report.offline = str(exc)
                return report
            report.stopped.append(f"Hugging Face: {exc}")
        try:
            self._catch_up_arxiv(reporter, report.arxiv)
        except SourceUnavailable as exc:
            report.stopped.append(f"arXiv: {exc}")
        return report


def counts(
    summary: IngestSummary, extra: Sequence[tuple[str, int | str]] = ()
) -> dict[str, int | float | str]:
    """A stage's counts for a job step's record."""
    found: dict[str, int | float | str] = {
        "added": summary.added,
        "updated": summary.updated,
        "rejected": summary.rejected,
    }
    found.update(extra)
    return found
