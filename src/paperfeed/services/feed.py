"""Feeds: the daily page, weekly/monthly digests, trending, single papers and the all-papers list.

Surfaces (HTML pages, the JSON API, RSS/Atom) call :class:`FeedService`; it reads through the
:class:`FeedQueries` port (``adapters/store/feed_queries.py`` implements it over the SQL store) and never
renders anything. All dates are UTC calendar days. Typical use from a page handler::

    feeds: FeedService = request.state.app.catalogue.feeds
    today = feeds.day(None)                 # latest day that has papers
    for item in today.items:                # ranked by upvotes, best first
        item.rank, item.upvotes, item.paper.title
    today.prev_day, today.skipped_before    # e.g. 2025-03-14, 2 (the weekend had no papers)
    week = feeds.week("2025-W12")           # PeriodFeed; raises InvalidPeriod on "2025-W99"
    hot = feeds.trending(limit=30)          # TrendingPage; hot.formula is the text to show
    detail = feeds.paper("2503.10613v2")    # PaperDetail | None; raises InvalidPaperId on garbage

The types it reads and hands out are in :mod:`paperfeed.domain.feed`. Errors callers should turn into
4xx: :class:`~paperfeed.domain.feed.InvalidPeriod` (bad day/week/month text),
:class:`~paperfeed.domain.feed.InvalidCursor` (a tampered ``papers_page`` cursor),
:class:`~paperfeed.domain.ids.InvalidPaperId` and ``ValueError`` for out-of-range ``limit``/``offset``
(all are ``ValueError`` subclasses).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta

from paperfeed.domain.feed import (
    DataVersion,
    DayFeed,
    FeedItem,
    FeedQueries,
    ListedPaper,
    PaperCursor,
    PaperDetail,
    PapersPage,
    Period,
    PeriodFeed,
    SortOrder,
    TrendCandidate,
    TrendingItem,
    TrendingPage,
    TrendingParams,
    decode_cursor,
    encode_cursor,
    parse_month,
    parse_week,
    trending_score,
)
from paperfeed.domain.ids import normalize_paper_id
from paperfeed.domain.models import Paper
from paperfeed.domain.now import SiteNow, site_now

__all__ = ["MAX_LIMIT", "FeedService"]

MAX_LIMIT = 1000  # hard cap for any page the service hands out (the API caps lower)


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
            tuple[str, str], tuple[float, DataVersion, list[TrendingItem], datetime, datetime]
        ] = {}

    @property
    def trending_formula(self) -> str:
        """Human-readable formula with parameters, e.g. for the trending page's footer."""
        return self.params.formula()

    def now(self) -> SiteNow:
        """The site's "now" (:mod:`paperfeed.domain.now`): the clock, or the store's newest activity once
        that is more than a week behind it. Trending, the topics' weeks and "rising this week" count
        from it."""
        return site_now(self.clock(), self.queries.latest_activity())

    def data_version(self) -> DataVersion:
        """What the web's page cache is keyed by: changes with every import, vote, comment and moderation
        action (see :meth:`FeedQueries.data_version`)."""
        return self.queries.data_version()

    # days ------------------------------------------------------------------------------------------

    def count_papers(self) -> int:
        """Every paper in the store, listed or not (a first start's page says how many wait for a feed)."""
        return self.queries.count_papers()

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

        Ages are measured from the *reference time*: the site's "now" (:meth:`now`: the clock, or the
        store's latest activity when that is more than a week behind it), so an archive still has a
        meaningful trending list. Candidates are the papers listed within
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

            note = None
        else:
            key = ("", "")
            site = self.now()
            note = site.note()

            def bounds() -> tuple[datetime, datetime]:
                return site.at - timedelta(days=self.params.window_days), site.at

        ranked, since, until = self._ranked(key, bounds)
        return TrendingPage(
            items=tuple(ranked[offset : offset + limit]),
            total=len(ranked),
            offset=offset,
            limit=limit,
            reference_time=until,
            window_days=(until - since).days,
            formula=self.trending_formula,
            now_note=note,
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

    def trending_papers(self, limit: int) -> list[Paper]:
        """The ``limit`` best trending papers (:class:`~paperfeed.domain.recommend.TrendingPapers`)."""
        return [item.paper for item in self.trending(limit=limit).items]

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
