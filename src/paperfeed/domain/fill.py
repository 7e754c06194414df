"""Filling a window of recent papers and catching up missed days: the pure rules and the progress port.

The *window* is the last ``days`` UTC days up to today. A Hugging Face day is *complete* once it was
fetched two or more days after it ended being "today" (its list and its upvotes have settled by then);
today and yesterday are therefore never complete and are fetched again on every catch-up. Which days are
complete is kept in the store's checkpoint table (:func:`hf_day_key`), written in the same transaction as
the day's papers, so a killed fill resumes at the first day not committed and never repeats a day.

An arXiv category's listing (the arXiv API, newest submissions first) keeps a :class:`ListingState` under
:func:`listing_key`: the pass in progress (so a killed pass resumes at the next page) and the newest
submission time a completed pass reached (so the next pass stops there).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, Protocol

import orjson

from .ports import PaperFetcher, PaperSource

__all__ = [
    "CATEGORIES_KEY",
    "SETTLE_DAYS",
    "FillReporter",
    "FillSources",
    "ListingState",
    "SilentReporter",
    "decode_categories",
    "encode_categories",
    "hf_day_key",
    "is_settled",
    "listing_key",
    "parse_categories",
    "top_categories",
    "window_days",
]

SETTLE_DAYS = 2  # a day fetched this many days after it is complete (HF's list and upvotes have settled)
CATEGORIES_KEY = "fill:arxiv-categories"  # the categories derived from the window's Daily Papers
_CATEGORY = re.compile(r"[a-z]+(?:-[a-z]+)*(?:\.[A-Za-z]+(?:-[A-Za-z]+)*)?")


class FillReporter(Protocol):
    """Told how a fill or catch-up advances: the CLI draws a bar per stage, or prints plain lines."""

    def begin(self, stage: str, total: int) -> None:
        """A stage starts (``"Hugging Face days"``, ``"arXiv categories"``) with ``total`` units."""
        ...

    def advance(self, stage: str, done: int, detail: str) -> None:
        """``done`` units of ``stage`` are finished; ``detail`` says what the last one brought."""
        ...

    def note(self, message: str) -> None:
        """Something the reader should know (a category skipped, a source refusing), one line."""
        ...


class SilentReporter:
    """A :class:`FillReporter` that reports nothing (the scheduler's daily job)."""

    def begin(self, stage: str, total: int) -> None:
        return None

    def advance(self, stage: str, done: int, detail: str) -> None:
        return None

    def note(self, message: str) -> None:
        return None


def window_days(today: date, days: int) -> list[date]:
    """The window's days, newest first (what a reader looks at first arrives first)."""
    if days < 1:
        raise ValueError(f"a window has at least one day, got {days}")
    return [today - timedelta(days=i) for i in range(days)]


def is_settled(day: date, fetched_on: date) -> bool:
    """Whether a fetch of ``day`` made on ``fetched_on`` completes it (see the module docstring)."""
    return day <= fetched_on - timedelta(days=SETTLE_DAYS)


def hf_day_key(day: date) -> str:
    """Checkpoint marking a Hugging Face day as complete."""
    return f"hf-daily:complete:{day.isoformat()}"


def listing_key(category: str) -> str:
    """Checkpoint of one arXiv category's listing harvest."""
    return f"arxiv-listing:{category}"


def parse_categories(text: str | None) -> tuple[str, ...]:
    """A comma list of arXiv category codes (``"cs.CL, cs.LG"``), deduplicated, in order.

    Raises :class:`ValueError` naming the entry that is not a category code.
    """
    found: list[str] = []
    for raw in (text or "").split(","):
        code = raw.strip()
        if not code:
            continue
        if not _CATEGORY.fullmatch(code):
            raise ValueError(f"not an arXiv category code: {code[:40]!r} (e.g. cs.CL, hep-th)")
        if code not in found:
            found.append(code)
    return tuple(found)


def top_categories(primaries: Iterable[str], *, limit: int, min_count: int = 2) -> list[str]:
    """The most frequent primary categories, most frequent first (ties by name), at most ``limit``.

    A category seen fewer than ``min_count`` times is left out (one stray paper does not make a category
    the instance follows), unless that leaves nothing: then the single most frequent one is kept.
    """
    counts = Counter(c for c in primaries if c)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    chosen = [c for c, n in ranked if n >= min_count][:limit]
    if not chosen and ranked and limit > 0:
        chosen = [ranked[0][0]]
    return chosen


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class ListingState:
    """The saved state of one category's listing harvest.

    ``high``: the newest submission time a completed pass reached; ``completed_at``: when that pass
    ended. A pass in progress has ``offset`` (entries of the newest-first list already read), ``floor``
    (it stops at submissions older than this) and ``newest`` (the newest submission it has seen).
    """

    high: datetime | None = None
    completed_at: datetime | None = None
    offset: int | None = None
    floor: datetime | None = None
    newest: datetime | None = None

    @property
    def in_progress(self) -> bool:
        return self.offset is not None and self.floor is not None

    def dumps(self) -> str:
        def iso(t: datetime | None) -> str | None:
            return t.isoformat() if t is not None else None

        return orjson.dumps(
            {
                "high": iso(self.high),
                "completed_at": iso(self.completed_at),
                "offset": self.offset,
                "floor": iso(self.floor),
                "newest": iso(self.newest),
            }
        ).decode()

    @staticmethod
    def loads(text: str | None) -> ListingState:
        """The state saved as ``text``; unreadable or missing state is a fresh one (a full pass)."""
        if not text:
            return ListingState()
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return ListingState()
        if not isinstance(value, dict):
            return ListingState()
        offset = value.get("offset")
        return ListingState(
            high=_time(value.get("high")),
            completed_at=_time(value.get("completed_at")),
            offset=offset if isinstance(offset, int) and offset >= 0 else None,
            floor=_time(value.get("floor")),
            newest=_time(value.get("newest")),
        )


def encode_categories(categories: Sequence[str], derived_at: datetime, sample: int) -> str:
    """The stored record of derived categories (what was chosen, when, from how many papers)."""
    return orjson.dumps(
        {"categories": list(categories), "derived_at": derived_at.isoformat(), "sample": sample}
    ).decode()


def decode_categories(text: str | None) -> tuple[tuple[str, ...], datetime | None]:
    """The categories and derivation time stored by :func:`encode_categories` (empty when unreadable)."""
    if not text:
        return (), None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return (), None
    if not isinstance(value, dict) or not isinstance(value.get("categories"), list):
        return (), None
    cats = tuple(c for c in value["categories"] if isinstance(c, str) and _CATEGORY.fullmatch(c))
    return cats, _time(value.get("derived_at"))


class FillSources(Protocol):
    """Where a first fill and a catch-up read papers from (the composition root's sources wing)."""

    def hf_day(self, day: date) -> PaperSource:
        """Hugging Face Daily Papers of one day."""
        ...

    def hf_probe(self, day: date, timeout: float) -> AbstractContextManager[PaperSource]:
        """The same through a client that tries once within ``timeout`` seconds."""
        ...

    def arxiv_papers(self) -> PaperFetcher:
        """The arXiv API for papers by id (to learn the window's categories)."""
        ...

    def arxiv_listing(
        self, category: str, since: datetime, max_results: int, clock: Callable[[], datetime]
    ) -> PaperSource:
        """The newest arXiv submissions of ``category`` back to ``since``; ``clock`` stamps a pass."""
        ...
