"""The site's "now": the one moment trending, topic weeks, "rising this week" and the feeds count from.

**The rule.** "Now" is the wall clock while the store is current, and the store's newest activity (the end
of its newest listed day, or its newest publication, whichever is later) once that is more than
:data:`ARCHIVE_AFTER` (7 days) behind the clock: the store is then an archive, and every page counts from
its last day instead of from today.

**Why 7 days.** A current instance can go days without new papers: arXiv announces nothing on weekends and
pauses up to five days around the new year, Hugging Face's daily list skips weekends, and a daily job can
fail for a day or two. Within a week, counting from today shows those gaps as what they are (trending
ages grow, a sparkline's last week is thin). Beyond a week the store is not lagging but stopped (a
dataset imported once, an instance switched off for months): counted from today, trending would be
empty, every topic's sparkline would end in weeks of zeros, and "rising this week" would never rise —
true of the calendar, useless about the papers. Counted from the newest paper, they say what the archive
held at its end, and the pages say so (:meth:`SiteNow.note`).

Pure: the caller brings the clock and the newest activity (``FeedService.now`` reads it from the store).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Protocol

from .wording import count

__all__ = ["ARCHIVE_AFTER", "SiteClock", "SiteNow", "site_now"]

ARCHIVE_AFTER = timedelta(days=7)


@dataclass(frozen=True, slots=True)
class SiteNow:
    """``at`` is "now" for every page; ``clock`` the wall clock it was decided at; ``newest`` the store's
    newest activity (None: an empty store)."""

    at: datetime
    clock: datetime
    newest: datetime | None

    @property
    def archive(self) -> bool:
        """True when "now" is the store's newest activity rather than the clock (see the module doc)."""
        return self.at < self.clock

    @property
    def today(self) -> date:
        """The day "now" falls on (UTC), whose week is "this week": for an archive, its newest day (the
        end of a listed day is the next midnight, which belongs to no paper)."""
        at = self.at.astimezone(UTC)
        return (at - timedelta(microseconds=1)).date() if self.archive else at.date()

    @property
    def behind(self) -> timedelta:
        """How far "now" is behind the clock (zero for a current store)."""
        return max(timedelta(0), self.clock - self.at)

    def note(self) -> str | None:
        """The sentence a page shows when it counts from the archive's end; None for a current store."""
        if not self.archive:
            return None
        newest, today = self.today, self.clock.astimezone(UTC).date()
        return (
            f"This instance's newest papers are from {_day(newest)}, "
            f"{count((today - newest).days, 'day')} before "
            f"today ({_day(today)}): ages, weeks and “this week” here count from then, not from today."
        )

    def label(self) -> str:
        """``28 Nov 2026 14:05 UTC`` (now) or ``21 Aug 2026 00:00 UTC, the newest papers`` (an archive)."""
        at = self.at.astimezone(UTC)
        stamp = f"{_day(at)} {at:%H:%M} UTC"
        return f"{stamp}, the end of the newest papers" if self.archive else f"{stamp}, now"


def _day(value: date | datetime) -> str:
    if isinstance(value, datetime):
        value = value.astimezone(UTC)
    return f"{value.day} {value:%b %Y}"


def site_now(
    clock: datetime, newest: datetime | None, *, archive_after: timedelta = ARCHIVE_AFTER
) -> SiteNow:
    """The site's "now" for the wall clock ``clock`` and the store's newest activity ``newest``."""
    if newest is None or clock - newest <= archive_after:
        return SiteNow(clock, clock, newest)
    return SiteNow(newest, clock, newest)


class SiteClock(Protocol):
    """The site's "now" (the feed service's: the clock, or the newest activity for an archive)."""

    def now(self) -> SiteNow: ...
