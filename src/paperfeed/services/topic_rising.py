"""Rising this week (issue #17) for the daily page, the JSON API and the digest.

Reads only the nine weeks it needs (``topic_weeks`` within bounds) and keeps each week's answer for
``ttl`` seconds: a digest run asks once per subscriber and the daily page once per render, the counts
change once a day (the ``topics`` step).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta

from paperfeed.domain.now import SiteClock, SiteNow
from paperfeed.domain.topic_rising import MIN_LIFT, PREVIOUS_WEEKS, SHOWN, RisingWeek, rising_entries
from paperfeed.domain.topics import TopicRecords, week_of

__all__ = ["RisingService"]


class RisingService:
    def __init__(
        self,
        records: TopicRecords,
        *,
        limit: int = SHOWN,
        min_lift: float = MIN_LIFT,
        ttl: float = 60.0,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        site: SiteClock | None = None,
    ) -> None:
        """``site``: the site's "now" (domain/now.py), whose week is "this week"; without it, ``clock``."""
        self.records = records
        self.limit, self.min_lift, self.ttl, self.clock = limit, min_lift, ttl, clock
        self.site = site
        self._lock = threading.Lock()
        self._cache: dict[tuple[date, int], tuple[float, RisingWeek | None]] = {}

    def now(self) -> SiteNow:
        """The site's "now": the clock, or the newest paper's time for an archive."""
        if self.site is not None:
            return self.site.now()
        clock = self.clock()
        return SiteNow(clock, clock, None)

    def today(self) -> date:
        """The day of the site's "now": its week is "this week"."""
        return self.now().today

    def week(self, day: date | None = None, *, limit: int | None = None) -> RisingWeek | None:
        """What rises in the week of ``day`` (default: today); None when no topics were ever built."""
        start = week_of(day or self.today())
        n = self.limit if limit is None else limit
        key = (start, n)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and time.monotonic() - hit[0] < self.ttl:
                return hit[1]
        found = self._read(start, n)
        with self._lock:
            if len(self._cache) > 64:
                self._cache.clear()
            self._cache[key] = (time.monotonic(), found)
        return found

    def _read(self, start: date, limit: int) -> RisingWeek | None:
        if self.records.current() is None:
            return None
        labels = {t.id: t.label for t in self.records.topics()}
        first = start - timedelta(weeks=PREVIOUS_WEEKS)
        series = self.records.weeks(since=first, until=start)
        weeks = {tid: series.get(tid, []) for tid in labels}  # every topic counts in the smoothing
        totals = self.records.total_weeks(since=first, until=start)
        return rising_entries(weeks, totals, labels, start, limit=limit, min_lift=self.min_lift)

    def for_digest(self, until: datetime) -> RisingWeek | None:
        """The rising topics for a digest whose window ends at ``until``: the week of the day before it
        (a Monday morning's mail speaks of the week just ended, not of a few hours of the new one)."""
        return self.week((until.astimezone(UTC) - timedelta(days=1)).date())
