"""Feed types: periods (day, ISO week, month), the trending score, the all-papers cursor, the
:class:`FeedQueries` port and what the feed service hands out.

Pure and typed: :mod:`paperfeed.services.feed` orders the reads, ``adapters/store/feed_queries.py``
implements :class:`FeedQueries` over SQL, and the surfaces parse periods with :func:`parse_day`,
:func:`parse_week` and :func:`parse_month` (errors are :class:`InvalidPeriod`, a ``ValueError``).
"""

from __future__ import annotations

import base64
import math
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal, Protocol

from paperfeed.domain.ids import InvalidPaperId, normalize_paper_id
from paperfeed.domain.models import Paper

__all__ = [
    "FIRST_DAY",
    "LAST_DAY",
    "TRENDING_FORMULA",
    "DataVersion",
    "DayFeed",
    "FeedItem",
    "FeedQueries",
    "InvalidCursor",
    "InvalidPeriod",
    "ListedPaper",
    "NodeIndexState",
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
    "decode_cursor",
    "encode_cursor",
    "parse_day",
    "parse_month",
    "parse_week",
    "trending_score",
]

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


@dataclass(frozen=True, slots=True)
class DataVersion:
    """What cached answers are keyed by, in four parts because they may lag by different amounts.

    ``removals`` moves when a paper, a comment or a reader is hidden or shown again: a moderator's action
    must reach every cached page at once. ``content`` moves with the readers' activity (votes, comments,
    edits): a few seconds late is fine. ``papers`` moves with imports, listings, citation harvests and
    topic placements: while an import or a harvest writes every second, a page cache may show them a
    minute late rather than render every page anew each second. ``derived`` moves with a topics build,
    the vector index taking in new vectors (an index save: after each slice the follower of ``paperfeed
    run`` embeds, about a minute apart while there is a backlog, and at the end of an indexing run) and a
    job run ending: rare events, each one a reader is waiting for (the map after a build, meaning search
    once the indexer is done, a harvest's papers and citations once its job has finished), so like a
    removal it reaches cached pages at once.
    """

    content: str
    removals: str
    papers: str = ""
    derived: str = ""


class FeedQueries(Protocol):
    """The store reads feeds need (SQL in ``adapters/store/feed_queries.py``)."""

    def latest_day(self) -> date | None:
        """The newest day with any listing."""
        ...

    def count_papers(self) -> int:
        """Every paper in the store, listed or not."""
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

    def data_version(self) -> DataVersion:
        """Changes whenever what an anonymous reader sees changes: papers, listings, hidden papers, votes,
        comments (added, edited, hidden, removed), hidden readers, citations, topics and their papers, the
        vector index's sync points and job runs. Cheap (a few index reads); the trending cache and the
        web's page cache are keyed by it."""
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
    now_note: str | None = None  # the site's "now" is the archive's end, not today: what a page says


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


class NodeIndexState(Protocol):
    """How far the indexes a node keeps on its own disk followed a shared (PostgreSQL) store: fingerprints
    of their state files, None where an index is not the node's own (``adapters/node_indexes.py``)."""

    def followed(self) -> tuple[str | None, str | None]:
        """(keyword index, vector index)."""
        ...
