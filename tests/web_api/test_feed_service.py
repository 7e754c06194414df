"""FeedService on real data (checked against the raw JSONL) and on small synthetic stores for edge cases."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.feed_queries import SqlFeedQueries
from paperfeed.bootstrap import App
from paperfeed.domain.feed import (
    InvalidCursor,
    InvalidPeriod,
    Period,
    TrendingParams,
    parse_day,
    parse_month,
    parse_week,
    trending_score,
)
from paperfeed.domain.ids import InvalidPaperId
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Listing, Paper
from paperfeed.services.feed import FeedService
from tests.support.papers import paper as make_paper

pytestmark = pytest.mark.shared

Records = dict[str, dict[str, Any]]


def _days_of(rec: dict[str, Any]) -> list[date]:
    raw = rec.get("daily_dates") or ([rec["daily_date"]] if rec.get("daily_date") else [])
    return [date.fromisoformat(d) for d in raw]


@pytest.fixture(scope="module")
def by_day(hf_records: Records) -> dict[date, list[dict[str, Any]]]:
    days: dict[date, list[dict[str, Any]]] = defaultdict(list)
    for rec in hf_records.values():
        for day in _days_of(rec):
            days[day].append(rec)
    return days


def _expected_order(recs: list[dict[str, Any]]) -> list[str]:
    return [r["id"] for r in sorted(recs, key=lambda r: (-(r["upvotes"] or 0), r["id"]))]


def test_latest_day_is_the_newest_listed_day_ranked_by_upvotes(web_app: App, by_day: dict[date, Any]) -> None:
    feed = web_app.catalogue.feeds.day(None)
    newest = max(by_day)
    assert feed.day == newest
    assert [i.paper.id for i in feed.items] == _expected_order(by_day[newest])
    assert [i.rank for i in feed.items] == list(range(1, len(feed.items) + 1))
    assert feed.next_day is None
    assert feed.skipped_after == 0
    upvotes = [i.upvotes for i in feed.items]
    assert upvotes == sorted(upvotes, reverse=True)


def test_days_match_the_file_and_navigation_skips_empty_days(
    web_app: App, by_day: dict[date, list[dict[str, Any]]]
) -> None:
    days = sorted(by_day)
    for i in range(0, len(days), 23):  # a spread of ~25 days across the two years
        day = days[i]
        feed = web_app.catalogue.feeds.day(day)
        assert [x.paper.id for x in feed.items] == _expected_order(by_day[day]), day
        assert feed.total == len(by_day[day])
        prev_day = days[i - 1] if i > 0 else None
        next_day = days[i + 1] if i + 1 < len(days) else None
        assert (feed.prev_day, feed.next_day) == (prev_day, next_day)
        assert feed.skipped_before == ((day - prev_day).days - 1 if prev_day else 0)
        assert feed.skipped_after == ((next_day - day).days - 1 if next_day else 0)


def test_a_day_without_papers_is_empty_but_navigable(web_app: App, by_day: dict[date, Any]) -> None:
    days = sorted(by_day)
    gap = next(d + timedelta(days=1) for d, e in itertools.pairwise(days) if (e - d).days > 1)
    feed = web_app.catalogue.feeds.day(gap)
    assert feed.empty
    assert feed.items == ()
    assert feed.prev_day == max(d for d in days if d < gap)
    assert feed.next_day == min(d for d in days if d > gap)


@pytest.mark.parametrize(
    ("kind", "label"), [("week", "2025-W11"), ("month", "2025-03"), ("week", "2024-W22")]
)
def test_periods_cover_their_days_once_and_page_consistently(
    web_app: App, by_day: dict[date, list[dict[str, Any]]], kind: str, label: str
) -> None:
    period = parse_week(label) if kind == "week" else parse_month(label)
    recs = {r["id"]: r for d, rs in by_day.items() if period.contains(d) for r in rs}
    full = web_app.catalogue.feeds.period(period)
    assert full.total == len(recs) > 0
    assert [i.paper.id for i in full.items] == _expected_order(list(recs.values()))
    paged = [
        i
        for offset in range(0, full.total, 7)
        for i in web_app.catalogue.feeds.period(period, 7, offset).items
    ]
    assert [(i.rank, i.paper.id) for i in paged] == [(i.rank, i.paper.id) for i in full.items]
    earlier = [d for d in by_day if d < period.start]
    assert full.prev_label == (Period.of(period.kind, max(earlier)).label if earlier else None)


def test_trending_ranks_by_the_documented_score(web_app: App, by_day: dict[date, Any]) -> None:
    page = web_app.catalogue.feeds.trending(limit=200)
    end = max(by_day) + timedelta(days=1)  # the data stops before "now": ages count from its end
    assert page.reference_time == datetime(end.year, end.month, end.day, tzinfo=UTC)
    assert page.items
    assert page.total >= len(page.items)
    params = TrendingParams()
    for item in page.items:
        age = (page.reference_time - item.first_seen).total_seconds() / 3600
        assert item.age_hours == pytest.approx(age)
        assert 0 <= age <= params.window_days * 24
        assert item.score == pytest.approx(trending_score(item.upvotes, item.stars, age, params))
    scores = [i.score for i in page.items]
    assert scores == sorted(scores, reverse=True)
    assert "ln(1 + github_stars)" in page.formula
    assert "g = 1.5" in page.formula
    second = web_app.catalogue.feeds.trending(limit=10, offset=10)
    assert [i.paper.id for i in second.items] == [i.paper.id for i in page.items[10:20]]


def test_trending_score_formula() -> None:
    p = TrendingParams(alpha=1.0, gravity=1.5)
    assert trending_score(10, 0, 0, p) == pytest.approx(11 / 2**1.5)
    assert trending_score(10, 1000, 22, p) == pytest.approx((11 + math.log1p(1000)) / 24**1.5)
    assert trending_score(5, 0, 1, p) > trending_score(5, 0, 2, p)  # older ranks lower
    assert trending_score(-3, -1, -5, p) == trending_score(0, 0, 0, p)  # garbage in, sane out


def test_papers_page_walks_every_paper_exactly_once(web_app: App, hf_records: Records) -> None:
    seen: list[Paper] = []
    cursor: str | None = None
    while True:
        page = web_app.catalogue.feeds.papers_page(cursor, 1000)
        seen.extend(page.items)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert len(seen) == len({p.id for p in seen}) == len(hf_records)
    keys = [(p.published, p.id) for p in seen]
    assert keys == sorted(keys, reverse=True)


@pytest.mark.parametrize("cursor", ["garbage!", "eA", "MjAyNXxub3QtYW4taWQ", "x" * 401])
def test_tampered_cursors_are_refused(web_app: App, cursor: str) -> None:
    with pytest.raises(InvalidCursor):
        web_app.catalogue.feeds.papers_page(cursor, 10)


def test_paper_lookup_accepts_any_spelling(web_app: App, hf_records: Records) -> None:
    for spelling, version in [
        ("2503.10613", None),
        ("2503.10613v2", 2),
        ("arXiv:2503.10613", None),
        ("https://arxiv.org/abs/2503.10613v1", 1),
    ]:
        detail = web_app.catalogue.feeds.paper(spelling)
        assert detail is not None
        assert detail.paper.id == "2503.10613"
        assert detail.requested_version == version
        assert detail.listed_on == tuple(_days_of(hf_records["2503.10613"]))
    assert web_app.catalogue.feeds.paper("2503.99999") is None
    with pytest.raises(InvalidPaperId):
        web_app.catalogue.feeds.paper("nonsense")


@pytest.mark.parametrize("bad", ["2025-W54", "2025-W00", "2025-12-01", "W12", ""])
def test_bad_weeks_are_refused(bad: str) -> None:
    with pytest.raises(InvalidPeriod):
        parse_week(bad)


@pytest.mark.parametrize("bad", ["2025-13", "2025-00", "2025-3-1", "March", "0000-01"])
def test_bad_months_are_refused(bad: str) -> None:
    with pytest.raises(InvalidPeriod):
        parse_month(bad)


@pytest.mark.parametrize("bad", ["2025-02-30", "2025-2-3", "20250203", "tomorrow", "2025-02-03T00:00"])
def test_bad_days_are_refused(bad: str) -> None:
    with pytest.raises(InvalidPeriod):
        parse_day(bad)


def test_iso_week_53_exists_only_in_long_years() -> None:
    assert parse_week("2026-W53").start == date(2026, 12, 28)
    with pytest.raises(InvalidPeriod):
        parse_week("2025-W53")


# -- synthetic stores: the cases the real file does not have ----------------------------------------------


def _paper(
    pid: str, published: datetime | None, upvotes: int | None = None, stars: int | None = None
) -> Paper:
    return make_paper(pid, day=published, abstract="Text.", upvotes=upvotes, github_stars=stars)


T0 = datetime(2025, 3, 10, 12, tzinfo=UTC)


def test_old_style_undated_and_tied_papers(store: SqlPaperStore) -> None:
    papers = [
        _paper("hep-th/9901001", datetime(1999, 1, 4, tzinfo=UTC)),
        _paper("math/0601001", datetime(2006, 1, 2, tzinfo=UTC), upvotes=3),
        _paper("scifact:12", None),
        _paper("scifact:7", None),
        _paper("2503.00001", T0, upvotes=5),
        _paper("2503.00002", T0, upvotes=5),
    ]
    listings = [
        Listing(date(2025, 3, 10), "2503.00002", "hf-daily", 5, rank=0),
        Listing(date(2025, 3, 10), "2503.00001", "hf-daily", 5, rank=1),
        Listing(date(2025, 3, 10), "math/0601001", "hf-daily", 3, rank=2),
    ]
    store.apply_batch(Batch(papers=papers, listings=listings))
    feeds = FeedService(SqlFeedQueries(store.engine))
    # Equal upvotes: the source's own position decides, then the id.
    assert [i.paper.id for i in feeds.day(date(2025, 3, 10)).items] == [
        "2503.00002",
        "2503.00001",
        "math/0601001",
    ]
    detail = feeds.paper("math.AG/0601001v2")
    assert detail is not None
    assert detail.paper.id == "math/0601001"
    assert detail.requested_version == 2
    assert detail.arxiv_url == "https://arxiv.org/abs/math/0601001v2"
    prefixed = feeds.paper("scifact:12")
    assert prefixed is not None
    assert prefixed.arxiv_url is None
    walked: list[str] = []
    cursor = None
    while True:
        page = feeds.papers_page(cursor, 2)
        walked += [p.id for p in page.items]
        if not (cursor := page.next_cursor):
            break
    # Dated newest first (ties by id, descending), then undated by id, descending.
    assert walked == ["2503.00002", "2503.00001", "math/0601001", "hep-th/9901001", "scifact:7", "scifact:12"]


def test_trending_uses_now_when_data_is_current_and_counts_unlisted_papers(store: SqlPaperStore) -> None:
    now = datetime(2025, 3, 12, 6, tzinfo=UTC)  # during the newest listed day
    papers = [
        _paper("2503.00010", T0, upvotes=40),  # listed today
        _paper("2503.00011", T0 + timedelta(days=1), upvotes=0, stars=500),  # unlisted, starred
        _paper("2503.00012", T0 + timedelta(days=1)),  # unlisted, no signal: not a candidate
        _paper("2501.00013", T0 - timedelta(days=60), upvotes=900),  # too old
    ]
    store.apply_batch(
        Batch(
            papers=papers,
            listings=[
                Listing(date(2025, 3, 12), "2503.00010", "hf-daily", 40),
                Listing(date(2025, 1, 9), "2501.00013", "hf-daily", 900),
            ],
        )
    )
    feeds = FeedService(SqlFeedQueries(store.engine), clock=lambda: now)
    page = feeds.trending()
    assert page.reference_time == now
    assert [i.paper.id for i in page.items] == ["2503.00010", "2503.00011"]
    listed, unlisted = page.items
    assert listed.first_seen == datetime(2025, 3, 12, tzinfo=UTC)
    assert listed.age_hours == pytest.approx(6)
    assert unlisted.first_seen == T0 + timedelta(days=1)
    assert unlisted.stars == 500
    # A clock far past the data: ages count from the newest activity instead (here the unlisted paper).
    later = FeedService(SqlFeedQueries(store.engine), clock=lambda: now + timedelta(days=300)).trending()
    assert later.reference_time == datetime(2025, 3, 13, tzinfo=UTC)
    assert [i.paper.id for i in later.items] == ["2503.00010", "2503.00011"]


def test_trending_cache_follows_store_changes(store: SqlPaperStore) -> None:
    store.apply_batch(
        Batch(
            papers=[_paper("2503.00020", T0, upvotes=1)],
            listings=[Listing(date(2025, 3, 10), "2503.00020", "hf-daily", 1)],
        )
    )
    feeds = FeedService(SqlFeedQueries(store.engine), cache_seconds=3600)
    assert [i.paper.id for i in feeds.trending().items] == ["2503.00020"]
    store.apply_batch(
        Batch(
            papers=[_paper("2503.00021", T0, upvotes=50)],
            listings=[Listing(date(2025, 3, 10), "2503.00021", "hf-daily", 50)],
        )
    )
    assert [i.paper.id for i in feeds.trending().items] == ["2503.00021", "2503.00020"]


def test_empty_store_gives_empty_feeds(store: SqlPaperStore) -> None:
    feeds = FeedService(SqlFeedQueries(store.engine), clock=lambda: T0)
    today = feeds.day(None)
    assert today.day == T0.date()
    assert today.empty
    assert today.prev_day is None
    assert feeds.trending().items == ()
    assert feeds.papers_page().items == ()
    assert feeds.papers_page().next_cursor is None
    assert feeds.week("2025-W11").total == 0


@pytest.mark.parametrize(("limit", "offset"), [(0, 0), (1001, 0), (10, -1)])
def test_out_of_range_pages_are_refused(store: SqlPaperStore, limit: int, offset: int) -> None:
    with pytest.raises(ValueError, match=r"limit|offset"):
        FeedService(SqlFeedQueries(store.engine)).day(date(2025, 3, 10), limit=limit, offset=offset)


def test_recent_lists_newest_days_first_at_any_depth(
    web_app: App, by_day: dict[date, list[dict[str, Any]]]
) -> None:
    expected = [pid for day in sorted(by_day, reverse=True) for pid in _expected_order(by_day[day])]
    for offset in (0, 13, 500, len(expected) - 20):
        items = web_app.catalogue.feeds.recent(limit=50, offset=offset)
        assert [i.paper.id for i in items] == expected[offset : offset + 50]
        assert [i.rank for i in items] == list(range(offset + 1, offset + 1 + len(items)))
    assert web_app.catalogue.feeds.recent(limit=10, offset=len(expected)) == []
