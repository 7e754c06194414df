"""Feeds: the daily page, weekly/monthly digests, trending, single papers and the all-papers list.

Surfaces (HTML pages, the JSON API, RSS/Atom) call :class:`FeedService`; it reads through the
:class:`FeedQueries` port (``adapters/store/feed_queries.py`` implements it over the SQL store) and never
renders anything. All dates are UTC calendar days. Typical use from a page handler::

    feeds: FeedService = request.state.app.feeds
    today = feeds.day(None)                 # latest day that has papers
    for item in today.items:                # ranked by upvotes, best first
        item.rank, item.upvotes, item.paper.title
    today.prev_day, today.skipped_before    # e.g. 2025-03-14, 2 (the weekend had no papers)
    week = feeds.week("2025-W12")           # PeriodFeed; raises InvalidPeriod on "2025-W99"
    hot = feeds.trending(limit=30)          # TrendingPage; hot.formula is the text to show
    detail = feeds.paper("2503.10613v2")    # PaperDetail | None; raises InvalidPaperId on garbage

Errors callers should turn into 4xx: :class:`InvalidPeriod` (bad day/week/month text),
:class:`InvalidCursor` (a tampered ``papers_page`` cursor), :class:`~paperfeed.domain.ids.InvalidPaperId`
and ``ValueError`` for out-of-range ``limit``/``offset`` (all are ``ValueError`` subclasses).
"""

from __future__ import annotations

import base64
import math
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal, Protocol

from paperfeed.domain.ids import InvalidPaperId, normalize_paper_id
from paperfeed.domain.models import Paper

__all__ = [
    "FIRST_DAY",
    "LAST_DAY",
    "MAX_LIMIT",
    "TRENDING_FORMULA",
    "DayFeed",
    "FeedItem",
    "FeedQueries",
    "FeedService",
    "InvalidCursor",
    "InvalidPeriod",
    "ListedPaper",
    "PaperCursor",
    "PaperDetail",
    "PapersPage",
    "Period",
    "PeriodFeed",
    "PeriodOutOfRange",
    "TrendCandidate",
    "TrendingItem",
    "TrendingPage",
    "TrendingParams",
    "parse_day",
    "parse_month",
    "parse_week",
    "trending_score",
]

MAX_LIMIT = 1000  # hard cap for any page the service hands out (the API caps lower)

PeriodKind = Literal["day", "week", "month"]
SortOrder = Literal["upvotes", "trending"]


class InvalidPeriod(ValueError):
    """A day, week or month string that cannot be understood; the message says what was expected."""


class PeriodOutOfRange(InvalidPeriod):
    """A well-formed day, week or month outside :data:`FIRST_DAY` … :data:`LAST_DAY`."""


class InvalidCursor(ValueError):
    """A ``papers_page`` cursor that this service did not hand out (or that was altered)."""


# -- time periods -------------------------------------------------------------------------------------

# The days paperfeed answers for: arXiv's first papers are from August 1991; nothing is listed before 1991,
# and a year beyond 2999 is a typo (or a probe for date arithmetic overflowing at 9999-12-31).
FIRST_DAY = date(1991, 1, 1)
LAST_DAY = date(2999, 12, 31)
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_RANGE = f"paperfeed knows days from {FIRST_DAY.isoformat()} (arXiv's start) to {LAST_DAY.isoformat()}"
_WEEK = re.compile(r"(\d{4})-W(\d{1,2})")
_MONTH = re.compile(r"(\d{4})-(\d{1,2})")


@dataclass(frozen=True, slots=True)
class Period:
    """An inclusive range of days with its canonical label (``2025-03-14``, ``2025-W12``, ``2025-03``)."""

    kind: PeriodKind
    label: str
    start: date
    end: date  # inclusive

    def contains(self, day: date) -> bool:
        return self.start <= day <= self.end

    @staticmethod
    def of(kind: PeriodKind, day: date) -> Period:
        """The period of ``kind`` that contains ``day``."""
        if kind == "day":
            return Period("day", day.isoformat(), day, day)
        if kind == "week":
            year, week, _ = day.isocalendar()
            start = date.fromisocalendar(year, week, 1)
            return Period("week", f"{year}-W{week:02d}", start, start + timedelta(days=6))
        start = day.replace(day=1)
        nxt = (start + timedelta(days=32)).replace(day=1)
        return Period("month", f"{day.year:04d}-{day.month:02d}", start, nxt - timedelta(days=1))


def parse_day(text: str) -> date:
    """``YYYY-MM-DD`` → date; :class:`InvalidPeriod` otherwise."""
    if not isinstance(text, str) or not _DAY.fullmatch(text.strip()):
        raise InvalidPeriod(f"date must look like YYYY-MM-DD, got {str(text)[:40]!r}")
    try:
        day = date.fromisoformat(text.strip())
    except ValueError as exc:
        raise InvalidPeriod(f"not a calendar date: {text.strip()!r} ({exc})") from None
    if not FIRST_DAY <= day <= LAST_DAY:
        raise PeriodOutOfRange(f"date {day.isoformat()} is out of range: {_RANGE}")
    return day


def _check_year(year: int, text: str) -> None:
    if not FIRST_DAY.year <= year <= LAST_DAY.year:
        raise PeriodOutOfRange(f"{text.strip()!r} is out of range: {_RANGE}")


def parse_week(text: str) -> Period:
    """ISO week ``YYYY-Www`` (``2025-W12``, Monday to Sunday) → Period; else :class:`InvalidPeriod`."""
    match = _WEEK.fullmatch(text.strip()) if isinstance(text, str) else None
    if not match:
        raise InvalidPeriod(f"week must look like YYYY-Www (ISO week, e.g. 2025-W12), got {str(text)[:40]!r}")
    year, week = int(match[1]), int(match[2])
    _check_year(year, text)
    try:
        start = date.fromisocalendar(year, week, 1)
    except ValueError:
        raise InvalidPeriod(f"{year} has no ISO week {week}") from None
    return Period.of("week", start)


def parse_month(text: str) -> Period:
    """``YYYY-MM`` → Period covering that month; :class:`InvalidPeriod` otherwise."""
    match = _MONTH.fullmatch(text.strip()) if isinstance(text, str) else None
    if not match:
        raise InvalidPeriod(f"month must look like YYYY-MM, got {str(text)[:40]!r}")
    year, month = int(match[1]), int(match[2])
    if not 1 <= month <= 12 or year < 1:
        raise InvalidPeriod(f"month {month} out of range 1-12 in {text.strip()!r}")
    _check_year(year, text)
    return Period.of("month", date(year, month, 1))


# -- what the store hands back (the port) ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ListedPaper:
    """A paper listed on one or more days of a period, aggregated over those days."""

    paper: Paper
    upvotes: int  # current upvotes (paper's, else the best listing count, else 0)
    first_day: date  # first day in the period it was listed
    listing_rank: int | None = None  # best 0-based position a source gave it, if any


@dataclass(frozen=True, slots=True)
class TrendCandidate:
    """A paper that may trend: its signals and when it first showed up (first listing, else published)."""

    paper: Paper
    upvotes: int
    stars: int
    first_seen: datetime


@dataclass(frozen=True, slots=True)
class PaperCursor:
    """Keyset position in the all-papers list: newest ``published`` first, undated papers last by id."""

    published: datetime | None
    paper_id: str


class FeedQueries(Protocol):
    """The store reads feeds need (SQL in ``adapters/store/feed_queries.py``)."""

    def latest_day(self) -> date | None:
        """The newest day with any listing."""
        ...

    def neighbours(self, start: date, end: date) -> tuple[date | None, date | None]:
        """The newest listed day before ``start`` and the oldest listed day after ``end``."""
        ...

    def listed(self, start: date, end: date, limit: int | None, offset: int) -> tuple[list[ListedPaper], int]:
        """Papers listed in ``[start, end]``, upvotes desc (then listing rank, id); plus the total."""
        ...

    def recent(self, limit: int, offset: int) -> tuple[list[ListedPaper], int]:
        """Listed papers newest day first, upvotes desc within a day; ``first_day`` is that day."""
        ...

    def trend_candidates(self, since: datetime, until: datetime) -> list[TrendCandidate]:
        """Papers listed in ``[since, until)``, ``first_seen`` = the start of their first listing day ever;
        plus papers never listed, published in ``[since, until)``, that have upvotes or GitHub stars.
        """
        ...

    def latest_activity(self) -> datetime | None:
        """The later of the end of the newest listed day and the newest ``published`` time."""
        ...

    def data_version(self) -> str:
        """Changes whenever papers or listings change (cheap; used to invalidate caches)."""
        ...

    def paper(self, paper_id: str) -> Paper | None: ...

    def listing_days(self, paper_id: str) -> list[date]:
        """Days the paper was listed, oldest first."""
        ...

    def papers_after(self, cursor: PaperCursor | None, limit: int) -> list[Paper]:
        """Up to ``limit`` papers after ``cursor`` in :class:`PaperCursor` order."""
        ...


# -- what the service hands out -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FeedItem:
    """One row of a ranked feed. ``rank`` is 1-based over the whole feed (not just this page)."""

    rank: int
    paper: Paper
    upvotes: int
    day: date  # the (first) day in the feed's period on which the paper was listed


@dataclass(frozen=True, slots=True)
class DayFeed:
    """One day's papers, best first, with navigation that skips days without papers.

    ``prev_day``/``next_day`` are the nearest days that *have* papers (None at either end);
    ``skipped_before``/``skipped_after`` count the empty calendar days jumped over (0 when adjacent),
    so a page can say "Friday, 2 days without papers skipped". ``items`` is empty when ``day`` itself
    has no papers (a requested day; ``day(None)`` always picks a non-empty one unless the store is empty).
    """

    day: date
    items: tuple[FeedItem, ...]
    total: int
    prev_day: date | None
    next_day: date | None
    skipped_before: int
    skipped_after: int
    offset: int = 0
    limit: int | None = None

    @property
    def empty(self) -> bool:
        return self.total == 0


@dataclass(frozen=True, slots=True)
class PeriodFeed:
    """A week's or month's papers (one page of them), with the neighbouring non-empty periods' labels."""

    period: Period
    items: tuple[FeedItem, ...]
    total: int
    offset: int
    limit: int | None
    sort: SortOrder
    prev_label: str | None  # e.g. "2025-W11" (nearest earlier period with papers)
    next_label: str | None


@dataclass(frozen=True, slots=True)
class TrendingItem:
    """A trending paper with the inputs of its score, so a page can explain the ranking."""

    rank: int  # 1-based
    paper: Paper
    score: float
    upvotes: int
    stars: int
    age_hours: float
    first_seen: datetime


@dataclass(frozen=True, slots=True)
class TrendingPage:
    items: tuple[TrendingItem, ...]
    total: int  # candidates ranked (papers with a signal in the window)
    offset: int
    limit: int
    reference_time: datetime  # "now" used for ages (see docs/trending.md)
    window_days: int
    formula: str  # TRENDING_FORMULA with the parameters filled in


@dataclass(frozen=True, slots=True)
class PaperDetail:
    """A paper plus what the paper page shows around it."""

    paper: Paper
    requested_version: int | None  # "2503.10613v2" → 2; None when asked without a version
    listed_on: tuple[date, ...]  # days on the daily feed, oldest first

    @property
    def arxiv_url(self) -> str | None:
        if ":" in self.paper.id:  # source-prefixed ids (e.g. scifact:123) are not on arXiv
            return None
        v = f"v{self.requested_version}" if self.requested_version else ""
        return f"https://arxiv.org/abs/{self.paper.id}{v}"


@dataclass(frozen=True, slots=True)
class PapersPage:
    items: tuple[Paper, ...]
    next_cursor: str | None  # pass back to papers_page for the next page; None on the last page


# -- trending -----------------------------------------------------------------------------------------

TRENDING_FORMULA = "score = (upvotes + 1 + α·ln(1 + github_stars)) / (age_hours + 2)^g"


@dataclass(frozen=True, slots=True)
class TrendingParams:
    """Parameters of :func:`trending_score` (documented in docs/trending.md)."""

    alpha: float = 1.0  # weight of the GitHub-stars term: 1 000 stars ≈ 7 upvotes
    gravity: float = 1.5  # how fast age pulls a paper down (HN uses 1.8 for comments-heavy items)
    window_days: int = 30  # only papers first seen this recently can trend

    def formula(self) -> str:
        return f"{TRENDING_FORMULA}, α = {self.alpha:g}, g = {self.gravity:g}"


def trending_score(upvotes: int, stars: int, age_hours: float, params: TrendingParams) -> float:
    """Time-decayed popularity, as on Hacker News, plus a damped GitHub-stars term."""
    age = max(age_hours, 0.0)
    signal = max(upvotes, 0) + 1 + params.alpha * math.log1p(max(stars, 0))
    return signal / math.pow(age + 2.0, params.gravity)


# -- cursors ------------------------------------------------------------------------------------------


def encode_cursor(cursor: PaperCursor) -> str:
    stamp = cursor.published.astimezone(UTC).isoformat() if cursor.published else ""
    raw = f"{stamp}|{cursor.paper_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(text: str) -> PaperCursor:
    if not isinstance(text, str) or not 1 <= len(text) <= 400:
        raise InvalidCursor("cursor must be a value returned as next_cursor by a previous page")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
        stamp, paper_id = raw.split("|", 1)
        published = datetime.fromisoformat(stamp) if stamp else None
        if published is not None and published.tzinfo is None:
            raise ValueError("naive time")
        normalize_paper_id(paper_id)
    except (ValueError, UnicodeDecodeError, InvalidPaperId):
        raise InvalidCursor(
            f"cursor {text[:40]!r} is not one this server handed out; start again without a cursor"
        ) from None
    return PaperCursor(published, paper_id)


def _check_page(limit: int | None, offset: int) -> None:
    if limit is not None and not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
    if offset < 0:
        raise ValueError(f"offset must be 0 or more, got {offset}")


# -- the service --------------------------------------------------------------------------------------


class FeedService:
    """Read-side feeds over :class:`FeedQueries`. Thread-safe; cheap to call per request.

    ``clock`` returns the current UTC time (tests pass a fixed one). Trending is cached for
    ``cache_seconds`` and recomputed at once when :meth:`FeedQueries.data_version` changes.
    """

    def __init__(
        self,
        queries: FeedQueries,
        *,
        trending: TrendingParams | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        cache_seconds: float = 60.0,
    ) -> None:
        self.queries = queries
        self.params = trending or TrendingParams()
        self.clock = clock
        self.cache_seconds = cache_seconds
        self._lock = threading.Lock()
        self._trend_cache: dict[
            tuple[str, str], tuple[float, str, list[TrendingItem], datetime, datetime]
        ] = {}

    @property
    def trending_formula(self) -> str:
        """Human-readable formula with parameters, e.g. for the trending page's footer."""
        return self.params.formula()

    # days ------------------------------------------------------------------------------------------

    def latest_day(self) -> date | None:
        """Newest day that has papers (None for an empty store)."""
        return self.queries.latest_day()

    def day(self, day: date | None = None, *, limit: int | None = None, offset: int = 0) -> DayFeed:
        """Papers listed on ``day`` ranked by upvotes (desc); ``None`` means the latest non-empty day.

        An empty store gives an empty feed for today. ``limit=None`` returns the whole day.
        """
        _check_page(limit, offset)
        if day is None:
            day = self.queries.latest_day() or self.clock().date()
        rows, total = self.queries.listed(day, day, limit, offset)
        prev_day, next_day = self.queries.neighbours(day, day)
        return DayFeed(
            day=day,
            items=_items(rows, offset),
            total=total,
            prev_day=prev_day,
            next_day=next_day,
            skipped_before=(day - prev_day).days - 1 if prev_day else 0,
            skipped_after=(next_day - day).days - 1 if next_day else 0,
            offset=offset,
            limit=limit,
        )

    def recent(self, *, limit: int = 50, offset: int = 0) -> list[FeedItem]:
        """The newest listed papers across days: newest day first, upvotes desc within a day.

        ``rank`` counts across the whole list (1 = the latest day's top paper).
        """
        _check_page(limit, offset)
        rows, _ = self.queries.recent(limit, offset)
        return list(_items(rows, offset))

    # weeks and months ------------------------------------------------------------------------------

    def week(
        self, week: str | Period, *, limit: int | None = None, offset: int = 0, sort: SortOrder = "upvotes"
    ) -> PeriodFeed:
        """Papers listed during ISO week ``week`` (``"2025-W12"``); see :meth:`period`."""
        return self.period(parse_week(week) if isinstance(week, str) else week, limit, offset, sort)

    def month(
        self, month: str | Period, *, limit: int | None = None, offset: int = 0, sort: SortOrder = "upvotes"
    ) -> PeriodFeed:
        """Papers listed during ``month`` (``"2025-03"``); see :meth:`period`."""
        return self.period(parse_month(month) if isinstance(month, str) else month, limit, offset, sort)

    def period(
        self, period: Period, limit: int | None = None, offset: int = 0, sort: SortOrder = "upvotes"
    ) -> PeriodFeed:
        """Papers listed in ``period``, each once, by upvotes (or by trending score as of its end)."""
        _check_page(limit, offset)
        if sort == "trending":
            page = self.trending(limit=limit or MAX_LIMIT, offset=offset, window=(period.start, period.end))
            items = tuple(FeedItem(t.rank, t.paper, t.upvotes, t.first_seen.date()) for t in page.items)
            total = page.total
        else:
            rows, total = self.queries.listed(period.start, period.end, limit, offset)
            items = _items(rows, offset)
        before, after = self.queries.neighbours(period.start, period.end)
        return PeriodFeed(
            period=period,
            items=items,
            total=total,
            offset=offset,
            limit=limit,
            sort=sort,
            prev_label=Period.of(period.kind, before).label if before else None,
            next_label=Period.of(period.kind, after).label if after else None,
        )

    # trending --------------------------------------------------------------------------------------

    def trending(
        self, limit: int = 30, offset: int = 0, *, window: tuple[date, date] | None = None
    ) -> TrendingPage:
        """Papers ranked by :func:`trending_score`, best first.

        Ages are measured from the *reference time*: now, or the store's latest activity (end of the
        newest listed day, or newest publication) if the data stops earlier, so an archive or a paused
        instance still has a meaningful trending list. Candidates are the papers listed within
        ``window_days`` before it (age counted from their first listing ever) and unlisted papers
        published then that have upvotes or stars. With ``window=(start, end)`` the reference time is
        the end of day ``end`` and candidates are those of that window (sort=trending over a week or
        month ranks the same papers as sort=upvotes).
        """
        _check_page(limit, offset)
        if window is not None:
            start, end = window
            key = (start.isoformat(), end.isoformat())

            def bounds() -> tuple[datetime, datetime]:
                since = datetime.combine(start, datetime.min.time(), UTC)
                return since, datetime.combine(end + timedelta(days=1), datetime.min.time(), UTC)

        else:
            key = ("", "")

            def bounds() -> tuple[datetime, datetime]:
                now = self.clock()
                latest = self.queries.latest_activity()
                until = min(now, latest) if latest else now
                return until - timedelta(days=self.params.window_days), until

        ranked, since, until = self._ranked(key, bounds)
        return TrendingPage(
            items=tuple(ranked[offset : offset + limit]),
            total=len(ranked),
            offset=offset,
            limit=limit,
            reference_time=until,
            window_days=(until - since).days,
            formula=self.trending_formula,
        )

    def _ranked(
        self, key: tuple[str, str], bounds: Callable[[], tuple[datetime, datetime]]
    ) -> tuple[list[TrendingItem], datetime, datetime]:
        """The ranked list for ``key``: cached until the store changes or ``cache_seconds`` pass."""
        version = self.queries.data_version()
        stamp = time.monotonic()
        with self._lock:
            hit = self._trend_cache.get(key)
        if hit is not None:
            made, made_version, items, since, until = hit
            if stamp - made < self.cache_seconds and made_version == version:
                return items, since, until
        since, until = bounds()
        scored: list[tuple[float, TrendCandidate, float]] = []
        for cand in self.queries.trend_candidates(since, until):
            age = (until - cand.first_seen).total_seconds() / 3600.0
            scored.append((trending_score(cand.upvotes, cand.stars, age, self.params), cand, age))
        scored.sort(key=lambda t: (-t[0], -t[1].upvotes, t[1].paper.id))
        ranked = [
            TrendingItem(i + 1, c.paper, score, c.upvotes, c.stars, age, c.first_seen)
            for i, (score, c, age) in enumerate(scored)
        ]
        with self._lock:
            if len(self._trend_cache) > 64:  # windows are user-chosen: keep the cache bounded
                self._trend_cache.clear()
            self._trend_cache[key] = (stamp, version, ranked, since, until)
        return ranked, since, until

    # papers ----------------------------------------------------------------------------------------

    def paper(self, paper_id: str) -> PaperDetail | None:
        """Look a paper up by any id spelling (``2503.10613v2``, ``arXiv:…``, URL, ``hep-th/9901001``).

        Returns None when it is not in the store; raises :class:`InvalidPaperId` for text that is no id.
        """
        parsed = normalize_paper_id(paper_id)
        found = self.queries.paper(parsed.base)
        if found is None:
            return None
        return PaperDetail(found, parsed.version, tuple(self.queries.listing_days(found.id)))

    def papers_page(self, cursor: str | None = None, limit: int = 50) -> PapersPage:
        """All papers, newest published first (undated last), ``limit`` at a time, by opaque cursor."""
        _check_page(limit, 0)
        position = decode_cursor(cursor) if cursor else None
        rows = self.queries.papers_after(position, limit + 1)
        more = len(rows) > limit
        rows = rows[:limit]
        nxt = encode_cursor(PaperCursor(rows[-1].published, rows[-1].id)) if more and rows else None
        return PapersPage(tuple(rows), nxt)


def _items(rows: Sequence[ListedPaper], offset: int) -> tuple[FeedItem, ...]:
    return tuple(
        FeedItem(offset + i + 1, row.paper, row.upvotes, row.first_day) for i, row in enumerate(rows)
    )
