"""Rising this week (issue #17): the few topics whose share of papers grew most, as readers see them.

The score is :func:`paperfeed.domain.topics.rising` (the smoothed log lift of a topic's share this week
against its previous 8 weeks, at least 3 papers this week). What this module adds is what the daily page,
the JSON API and the digest show of it:

* **lift** ``exp(score)``: how many times its usual share the topic has this week, smoothed the same way
  as the score (one paper added to every count), so a topic with no paper before is not "∞×";
* only topics with ``lift ≥ min_lift`` (1.5 by default: "rising" should mean clearly more than usual),
  at most ``limit`` of them, best first;
* per topic its **share of all papers, week by week**, the 8 previous weeks and this one (the plot:
  a share, not a count, so a short week so far does not look like a fall).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from paperfeed.domain.topics import WeekCount, rising, week_of

from .wording import count

__all__ = [
    "MIN_LIFT",
    "PREVIOUS_WEEKS",
    "SHOWN",
    "RisingEntry",
    "RisingWeek",
    "lift_words",
    "rising_entries",
    "rising_heading",
    "shares_alt",
]

PREVIOUS_WEEKS = 8  # the weeks a topic's share this week is compared with
MIN_LIFT = 1.5
SHOWN = 3  # topics on the daily page's box and in a digest


@dataclass(frozen=True, slots=True)
class RisingEntry:
    """One rising topic as shown: ``shares`` are its share of all papers per week, oldest first, this
    week last (``PREVIOUS_WEEKS + 1`` values)."""

    topic_id: int
    label: str
    papers: int  # this week
    share: float  # this week's share of all papers
    before: float  # its share over the previous weeks
    lift: float  # exp(score): smoothed "times its usual share"
    shares: tuple[float, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.topic_id,
            "label": self.label,
            "papers": self.papers,
            "share": round(self.share, 6),
            "before": round(self.before, 6),
            "lift": round(self.lift, 4),
            "shares": [round(s, 6) for s in self.shares],
        }

    @staticmethod
    def from_json(raw: Mapping[str, object]) -> RisingEntry:
        shares = raw.get("shares")
        return RisingEntry(
            topic_id=int(str(raw["id"])),
            label=str(raw.get("label") or ""),
            papers=int(str(raw.get("papers") or 0)),
            share=float(str(raw.get("share") or 0.0)),
            before=float(str(raw.get("before") or 0.0)),
            lift=float(str(raw.get("lift") or 0.0)),
            shares=tuple(float(str(s)) for s in shares) if isinstance(shares, list) else (),
        )


@dataclass(frozen=True, slots=True)
class RisingWeek:
    """What is rising in the week starting ``week`` (a Monday); ``entries`` empty when nothing qualifies."""

    week: date
    entries: tuple[RisingEntry, ...]


def rising_entries(
    weeks: Mapping[int, Sequence[WeekCount]],
    totals: Sequence[WeekCount],
    labels: Mapping[int, str],
    day: date,
    *,
    limit: int = SHOWN,
    min_lift: float = MIN_LIFT,
    previous: int = PREVIOUS_WEEKS,
) -> RisingWeek:
    """The rising topics of the week of ``day`` (see the module docstring); topics without a label
    (gone since the counts were read) are skipped."""
    start = week_of(day)
    span = [start - timedelta(weeks=i) for i in range(previous, -1, -1)]  # oldest first, this week last
    total = {w.week: w.papers for w in totals}
    out: list[RisingEntry] = []
    for r in rising(weeks, totals, start, previous=previous):
        lift = math.exp(r.score)
        if lift < min_lift or r.topic_id not in labels:
            continue
        mine = {w.week: w.papers for w in weeks.get(r.topic_id, ())}
        shares = tuple((mine.get(w, 0) / total[w]) if total.get(w) else 0.0 for w in span)
        out.append(RisingEntry(r.topic_id, labels[r.topic_id], r.papers, r.share, r.before, lift, shares))
        if len(out) >= limit:
            break
    return RisingWeek(start, tuple(out))


def lift_words(entry: RisingEntry, previous: int = PREVIOUS_WEEKS) -> str:
    """The lift as a reader says it: "3.1× its usual share", or that the topic had no paper before."""
    papers = f"{entry.papers} paper{'s' if entry.papers != 1 else ''} this week"
    if entry.before <= 0:
        return f"{papers}, none in the {count(previous, 'week')} before"
    return f"{papers}, {entry.lift:.1f}× its usual share"


def shares_alt(entry: RisingEntry) -> str:
    """The plot's words, for alt text and screen readers: each week's share, this week last."""
    cells = [_percent(s) for s in entry.shares]
    if not cells:
        return f"{entry.label}: share of papers per week"
    return (
        f"{entry.label}: share of all papers per week over the last {count(len(cells), 'week')}: "
        f"{', '.join(cells[:-1])}; this week {cells[-1]}"
    )


def _percent(share: float) -> str:
    return f"{share * 100:.1f}%" if share < 0.1 else f"{share * 100:.0f}%"


def rising_heading(week: date, today: date) -> str:
    """The heading for the week starting ``week`` seen on ``today``: "Rising this week", "Rising last
    week", or "Rising in the week of 3 March 2025"."""
    if week == week_of(today):
        return "Rising this week"
    if week == week_of(today) - timedelta(weeks=1):
        return "Rising last week"
    return f"Rising in the week of {week.day} {week:%B %Y}"
