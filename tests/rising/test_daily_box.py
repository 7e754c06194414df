"""The daily page's "Rising this week" box and ``GET /api/topics/rising``, through the real app, on a
real SQLite file and again on a real PostgreSQL database (the ``db_url`` fixture).

The weeks are controlled (tests/support/rising.py): three topics with four papers a week for nine weeks,
and, when the galaxy topic bursts, twelve more galaxy papers in the week of 17 March 2025. Topics are
built by the App's own TopicService (scikit-learn k-means, k = 3).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings
from paperfeed.web import create_app
from tests.support.rising import add_rising_world, expected_lift

WEEK = date(2025, 3, 17)  # a Monday
DAY = date(2025, 3, 18)  # the day the week's papers are listed on


def _settings(data_dir: Path, db_url: str) -> Settings:
    return Settings(
        data_dir=data_dir,
        database_url=db_url,
        embedding_backend="fake",
        topics_min_papers=30,
        topics_k=3,
    )


def _world(tmp_path: Path, db_url: str, *, burst: int, build: bool) -> tuple[Settings, int | None]:
    settings = _settings(tmp_path / "data", db_url)
    app = build_app(settings)
    try:
        add_rising_world(app.core.store, WEEK, burst=burst, listed_on=DAY)
        if not build:
            return settings, None
        summary = app.catalogue.topics.build()
        assert summary.build.topics == 3
        galaxy = app.catalogue.topics.topic_of("rz:galaxy-w0-00")
        assert galaxy is not None
        return settings, galaxy.id
    finally:
        app.close()


@pytest.fixture
def client_of() -> Iterator[Any]:
    opened: list[TestClient] = []

    def make(settings: Settings) -> TestClient:
        c = TestClient(create_app(lambda: build_app(settings)), raise_server_exceptions=True)
        c.__enter__()
        opened.append(c)
        return c

    yield make
    for c in opened:
        c.__exit__(None, None, None)


def _box(html: str) -> str | None:
    found = re.search(r'<aside class="rising-box".*?</aside>', html, re.S)
    return found.group(0) if found else None


def test_the_day_and_week_pages_show_the_rising_topic(tmp_path: Path, db_url: str, client_of: Any) -> None:
    settings, galaxy = _world(tmp_path, db_url, burst=12, build=True)
    client = client_of(settings)

    day = client.get(f"/papers/date/{DAY.isoformat()}")
    assert day.status_code == 200
    box = _box(day.text)
    assert box is not None, "the box is missing"
    # the store is an archive (newest paper March 2025): "this week" is its last week, and the box says so
    assert "Rising this week" in box
    assert "count from then, not from today" in box
    items = re.findall(r"<li>.*?</li>", box, re.S)
    assert len(items) == 1  # only galaxy rises; graph and protein kept their share
    assert f'href="/topics/{galaxy}"' in items[0]
    assert "galaxy" in items[0]
    lift = expected_lift()
    assert f"16 papers this week, {lift:.1f}× its usual share" in items[0]
    assert "66.7% of this week&#39;s papers, 33.3% of the 8 weeks before" in items[0]
    svg = re.search(r'<svg class="share-bars".*?</svg>', items[0], re.S)
    assert svg is not None
    bars = re.findall(r'<rect class="bar" [^>]*height="([\d.]+)" fill="([^"]+)"', svg.group(0))
    assert len(bars) == 9  # the 8 weeks before and this one
    heights = [float(h) for h, _ in bars]
    assert heights[-1] == max(heights)
    assert heights[-1] == pytest.approx(2 * heights[0], rel=0.02)
    assert bars[-1][1] != bars[0][1]  # this week in the strong colour
    assert 'style="' not in box  # the CSP's style-src 'self' would block an inline style

    week = client.get("/papers/week/2025-W12")
    assert week.status_code == 200
    week_box = _box(week.text)
    assert week_box is not None
    assert f'href="/topics/{galaxy}"' in week_box
    month = client.get("/papers/month/2025-03")
    assert month.status_code == 200
    assert _box(month.text) is None  # a month is not a week

    api = client.get("/api/topics/rising", params={"date": DAY.isoformat()})
    assert api.status_code == 200
    body = api.json()
    assert body["built"] is True
    assert body["week"] == "2025-03-17"
    assert body["weeks"][0] == "2025-01-20"
    assert body["weeks"][-1] == "2025-03-17"
    assert body["minLift"] == 1.5
    assert body["previousWeeks"] == 8
    [topic] = body["topics"]
    assert topic["id"] == galaxy
    assert topic["url"] == f"/topics/{galaxy}"
    assert topic["papers"] == 16
    assert topic["lift"] == pytest.approx(lift, abs=1e-3)
    assert topic["share"] == pytest.approx(16 / 24, abs=1e-5)
    assert topic["before"] == pytest.approx(32 / 96, abs=1e-5)
    assert topic["shares"] == pytest.approx([1 / 3] * 8 + [2 / 3], abs=1e-5)
    assert topic["summary"].endswith("× its usual share")

    earlier = client.get("/api/topics/rising", params={"date": "2025-03-03"}).json()
    assert earlier["built"] is True
    assert earlier["topics"] == []


def test_no_box_when_nothing_rises(tmp_path: Path, db_url: str, client_of: Any) -> None:
    settings, _ = _world(tmp_path, db_url, burst=0, build=True)
    client = client_of(settings)
    page = client.get(f"/papers/date/{DAY.isoformat()}")
    assert page.status_code == 200
    assert "rising-box" not in page.text
    body = client.get("/api/topics/rising", params={"date": DAY.isoformat()}).json()
    assert body["built"] is True
    assert body["topics"] == []


def test_no_box_before_topics_are_built(tmp_path: Path, db_url: str, client_of: Any) -> None:
    settings, _ = _world(tmp_path, db_url, burst=12, build=False)
    client = client_of(settings)
    page = client.get(f"/papers/date/{DAY.isoformat()}")
    assert page.status_code == 200
    assert "study rz:graph-w0-00" in page.text  # the day's papers are there
    assert "rising-box" not in page.text
    body = client.get("/api/topics/rising", params={"date": DAY.isoformat()}).json()
    assert body == body | {"built": False, "topics": [], "week": "2025-03-17"}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"date": "2025-02-30"}, "date"),
        ({"date": "yesterday"}, "date"),
        ({"date": "0001-01-01"}, "date"),
        ({"date": "x" * 41}, "date"),
        ({"limit": "0"}, "limit"),
        ({"limit": "11"}, "limit"),
        ({"limit": "three"}, "limit"),
    ],
)
def test_bad_queries_are_clear_errors(tmp_path: Path, query: dict[str, str], field: str) -> None:
    settings = _settings(tmp_path / "data", f"sqlite+pysqlite:///{tmp_path / 'p.db'}")
    app = create_app(lambda: build_app(settings))
    with TestClient(app, raise_server_exceptions=True) as client:
        answer = client.get("/api/topics/rising", params=query)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"].startswith(f"{field}: ")
