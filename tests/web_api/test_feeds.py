"""RSS 2.0 and Atom feeds, parsed back with feedparser: well-formed, right items, right links."""

from __future__ import annotations

from datetime import date

import feedparser
import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App

pytestmark = pytest.mark.shared


def _parse(client: TestClient, url: str, media: str) -> feedparser.FeedParserDict:
    response = client.get(url)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith(media)
    parsed = feedparser.parse(response.content)
    assert parsed.bozo == 0, parsed.get("bozo_exception")
    return parsed


@pytest.mark.parametrize(
    ("kind", "version", "media"),
    [("rss", "rss20", "application/rss+xml"), ("atom", "atom10", "application/atom+xml")],
)
def test_daily_feed_lists_the_days_papers_in_order(
    client: TestClient, web_app: App, kind: str, version: str, media: str
) -> None:
    day = web_app.catalogue.feeds.day(date(2025, 3, 14))
    parsed = _parse(client, f"/{kind}/daily?date=2025-03-14", media)
    assert parsed.version == version
    assert "2025-03-14" in parsed.feed.title
    assert parsed.feed.link == "http://testserver/papers/date/2025-03-14"
    assert [e.link for e in parsed.entries] == [f"http://testserver/papers/{i.paper.id}" for i in day.items]
    assert [e.title for e in parsed.entries] == [i.paper.title for i in day.items]
    first = parsed.entries[0]
    assert first.id == "http://testserver/papers/2503.10613"
    assert day.items[0].paper.abstract[:60] in first.summary
    assert first.published_parsed[:3] == (2025, 3, 14)
    assert [a.get("name") for a in first.authors] == list(day.items[0].paper.authors)
    assert any(link.href == "https://arxiv.org/abs/2503.10613" for link in first.links) or kind == "rss"


def test_daily_feed_defaults_to_the_latest_day(client: TestClient, web_app: App) -> None:
    latest = web_app.catalogue.feeds.day(None)
    parsed = _parse(client, "/rss/daily", "application/rss+xml")
    assert latest.day.isoformat() in parsed.feed.title
    assert len(parsed.entries) == latest.total


@pytest.mark.parametrize("kind", ["rss", "atom"])
def test_trending_feed_follows_the_trending_ranking(client: TestClient, web_app: App, kind: str) -> None:
    page = web_app.catalogue.feeds.trending(30)
    parsed = _parse(client, f"/{kind}/trending", f"application/{kind}+xml")
    assert [e.link for e in parsed.entries] == [f"http://testserver/papers/{t.paper.id}" for t in page.items]
    assert page.formula in parsed.feed.get("subtitle", parsed.feed.get("description", ""))
    assert f"score {page.items[0].score:.3f}" in parsed.entries[0].summary


def test_feed_links_use_the_configured_base_url(web_settings: object) -> None:
    from paperfeed.bootstrap import build_app
    from paperfeed.settings import Settings
    from paperfeed.web import create_app

    assert isinstance(web_settings, Settings)
    settings = web_settings.model_copy(update={"base_url": "https://papers.example.org"})
    with TestClient(create_app(lambda: build_app(settings))) as c:
        parsed = feedparser.parse(c.get("/atom/daily").content)
    assert parsed.bozo == 0
    assert parsed.entries[0].link.startswith("https://papers.example.org/papers/")
    assert any(link.href == "https://papers.example.org/atom/daily" for link in parsed.feed.links)


@pytest.mark.parametrize("kind", ["rss", "atom"])
def test_search_feed(client: TestClient, web_app: App, kind: str) -> None:
    parsed = _parse(client, f"/{kind}/search?q=diffusion+transformer", f"application/{kind}+xml")
    hits = web_app.search.hybrid.search("diffusion transformer", limit=30).hits
    assert [e.link for e in parsed.entries] == [f"http://testserver/papers/{h.paper.id}" for h in hits]
    assert "diffusion transformer" in parsed.feed.title


def test_feeds_survive_control_characters_in_titles(tmp_path: object) -> None:
    from datetime import UTC, datetime
    from pathlib import Path

    from paperfeed.bootstrap import build_app
    from paperfeed.domain.ingest import Batch
    from paperfeed.domain.models import Listing, Paper
    from paperfeed.settings import Settings
    from paperfeed.web import create_app

    assert isinstance(tmp_path, Path)
    settings = Settings(data_dir=tmp_path)
    app = build_app(settings)
    paper = Paper(
        id="2503.00001",
        title="Bad \x0b title \x1f",
        abstract="x\x0cy <b>&amp;</b>",
        authors=("A\x01",),
        published=datetime(2025, 3, 14, tzinfo=UTC),
        upvotes=2,
    )
    app.core.store.apply_batch(
        Batch(papers=[paper], listings=[Listing(date(2025, 3, 14), paper.id, "hf-daily", 2)])
    )
    app.close()
    with TestClient(create_app(lambda: build_app(settings))) as c:
        for url in ("/rss/daily", "/atom/daily", "/rss/trending"):
            response = c.get(url)
            assert response.status_code == 200
            parsed = feedparser.parse(response.content)
            assert parsed.bozo == 0
            assert len(parsed.entries) == 1
