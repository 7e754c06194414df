"""The pure rules of "Rising this week": which topics are shown, the words and the headings."""

from __future__ import annotations

import math
from datetime import date, timedelta

import pytest

from paperfeed.domain.topic_rising import (
    RisingEntry,
    lift_words,
    rising_entries,
    rising_heading,
    shares_alt,
)
from paperfeed.domain.topics import WeekCount

MONDAY = date(2025, 3, 17)


def _weeks(counts: dict[int, list[int]]) -> tuple[dict[int, list[WeekCount]], list[WeekCount]]:
    """Per topic, papers in the 8 weeks before MONDAY and in its week (9 numbers, oldest first)."""
    weeks = {
        tid: [WeekCount(MONDAY - timedelta(weeks=8 - i), n) for i, n in enumerate(series)]
        for tid, series in counts.items()
    }
    totals = [
        WeekCount(MONDAY - timedelta(weeks=8 - i), sum(s[i] for s in counts.values())) for i in range(9)
    ]
    return weeks, totals


def test_only_a_clear_lift_with_enough_papers_is_shown_best_first() -> None:
    weeks, totals = _weeks(
        {
            1: [4] * 8 + [16],  # clearly up (lift 1.65)
            2: [8] * 8 + [4],  # down
            3: [0] * 8 + [2],  # new (lift 9.6), but only 2 papers: below rising()'s minimum of 3
            4: [4] * 8 + [8],  # up a little, but less than the others (0.87 after smoothing)
            5: [1] * 8 + [9],  # up most (lift 3.56)
        }
    )
    labels = {t: f"topic {t}" for t in weeks}
    found = rising_entries(weeks, totals, labels, MONDAY + timedelta(days=3))
    assert found.week == MONDAY
    assert [e.topic_id for e in found.entries] == [5, 1]
    top = found.entries[0]
    n_now, n_before, t = sum(s[-1].papers for s in weeks.values()), sum(w.papers for w in totals[:8]), 5
    assert (n_now, n_before) == (39, 136)
    assert top.lift == pytest.approx(((9 + 1) / (n_now + t)) / ((8 + 1) / (n_before + t)))
    assert top.shares[-1] == pytest.approx(9 / n_now)
    assert top.shares[0] == pytest.approx(1 / (n_before / 8))
    assert len(top.shares) == 9
    assert rising_entries(weeks, totals, labels, MONDAY, limit=1).entries == found.entries[:1]
    assert [e.topic_id for e in rising_entries(weeks, totals, labels, MONDAY, min_lift=1.7).entries] == [5]
    assert rising_entries(weeks, totals, {1: "only one"}, MONDAY).entries[0].label == "only one"


def test_nothing_rises_in_a_steady_week_or_without_data() -> None:
    weeks, totals = _weeks({1: [4] * 9, 2: [4] * 9})
    assert rising_entries(weeks, totals, {1: "a", 2: "b"}, MONDAY).entries == ()
    assert rising_entries({}, [], {}, MONDAY).entries == ()


def _entry(**over: object) -> RisingEntry:
    values: dict[str, object] = {
        "topic_id": 7,
        "label": "galaxy, dark matter",
        "papers": 5,
        "share": 0.2,
        "before": 0.05,
        "lift": math.e,
        "shares": (0.05, 0.0, 0.2),
    }
    values.update(over)
    return RisingEntry(**values)  # type: ignore[arg-type]


def test_words_a_reader_understands() -> None:
    assert lift_words(_entry()) == "5 papers this week, 2.7× its usual share"
    assert lift_words(_entry(before=0.0)) == "5 papers this week, none in the 8 weeks before"
    assert lift_words(_entry(papers=1)).startswith("1 paper this week")
    assert shares_alt(_entry()) == (
        "galaxy, dark matter: share of all papers per week over the last 3 weeks: 5.0%, 0.0%; this week 20%"
    )
    assert RisingEntry.from_json(_entry().to_json()) == _entry(lift=round(math.e, 4))


@pytest.mark.parametrize(
    ("today", "heading"),
    [
        (date(2025, 3, 17), "Rising this week"),
        (date(2025, 3, 23), "Rising this week"),
        (date(2025, 3, 24), "Rising last week"),
        (date(2025, 3, 31), "Rising in the week of 17 March 2025"),
        (date(2025, 3, 16), "Rising in the week of 17 March 2025"),
    ],
)
def test_headings(today: date, heading: str) -> None:
    assert rising_heading(MONDAY, today) == heading
