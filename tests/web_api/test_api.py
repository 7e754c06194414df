"""The JSON API through the ASGI app: Hugging Face's shapes, correct answers, paging and links."""

from __future__ import annotations

import html
import re
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson
import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App
from paperfeed.domain.models import Paper
from paperfeed.domain.search import Span
from paperfeed.web.hf_json import hf_time, highlight

pytestmark = pytest.mark.shared

HF_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


@pytest.fixture(scope="module")
def hf_shapes(shared_dir: Path) -> dict[str, set[str]]:
    """Keys used by real Hugging Face responses at each level (items, papers, authors)."""
    keys: dict[str, set[str]] = {"item": set(), "paper": set(), "author": set()}
    for path in sorted((shared_dir / "fixtures" / "hf_daily_api").glob("*.json")):
        for item in orjson.loads(path.read_bytes()):
            keys["item"] |= set(item)
            keys["paper"] |= set(item["paper"])
            for author in item["paper"]["authors"]:
                keys["author"] |= set(author)
    return keys


def _ids(body: list[dict[str, Any]]) -> list[str]:
    return [item["paper"]["id"] for item in body]


def test_daily_items_use_only_hugging_face_fields(client: TestClient, hf_shapes: dict[str, set[str]]) -> None:
    body = client.get("/api/daily_papers", params={"date": "2025-03-14"}).json()
    assert len(body) == 26  # the real HF response for that day has 26 papers too
    for item in body:
        assert set(item) <= hf_shapes["item"]
        assert set(item["paper"]) <= hf_shapes["paper"]
        for author in item["paper"]["authors"]:
            assert set(author) <= hf_shapes["author"]
        assert {"paper", "publishedAt", "title", "summary", "numComments"} <= set(item)
        assert {"id", "authors", "publishedAt", "title", "summary", "upvotes"} <= set(item["paper"])
        assert HF_TIME.fullmatch(item["publishedAt"])
        assert HF_TIME.fullmatch(item["paper"]["publishedAt"])
        assert item["publishedAt"] == "2025-03-14T00:00:00.000Z"
        assert isinstance(item["paper"]["upvotes"], int)
        assert isinstance(item["numComments"], int)


def test_a_day_matches_the_real_hugging_face_response(client: TestClient, shared_dir: Path) -> None:
    real = orjson.loads((shared_dir / "fixtures/hf_daily_api/2025-03-14.json").read_bytes())
    ours = client.get("/api/daily_papers", params={"date": "2025-03-14", "limit": 100}).json()
    assert sorted(_ids(ours)) == sorted(_ids(real))
    theirs = {item["paper"]["id"]: item for item in real}
    for item in ours:
        hf = theirs[item["paper"]["id"]]
        assert item["paper"]["authors"] == [
            {"name": a["name"], "hidden": False} for a in hf["paper"]["authors"]
        ]
        assert item["paper"]["publishedAt"] == hf["paper"]["publishedAt"]
        assert item["numComments"] == hf["numComments"]
        assert item["paper"].get("githubRepo") == hf["paper"].get("githubRepo")


def test_daily_papers_pages_and_periods_agree_with_the_feed_service(client: TestClient, web_app: App) -> None:
    feeds = web_app.catalogue.feeds
    day = feeds.day(date(2025, 3, 14))
    first = client.get("/api/daily_papers", params={"date": "2025-03-14", "limit": 10, "p": 0}).json()
    second = client.get("/api/daily_papers", params={"date": "2025-03-14", "limit": 10, "p": 1}).json()
    assert _ids(first) + _ids(second) == [i.paper.id for i in day.items[:20]]
    assert [x["paper"]["upvotes"] for x in first] == [i.upvotes for i in day.items[:10]]
    week = client.get("/api/daily_papers", params={"week": "2025-W11", "limit": 100}).json()
    assert _ids(week) == [i.paper.id for i in feeds.week("2025-W11", limit=100).items]
    month = client.get("/api/daily_papers", params={"month": "2025-03", "limit": 100, "p": 2}).json()
    assert _ids(month) == [i.paper.id for i in feeds.month("2025-03", limit=100, offset=200).items]
    hot = client.get("/api/daily_papers", params={"week": "2025-W11", "sort": "trending", "limit": 5}).json()
    assert _ids(hot) == [i.paper.id for i in feeds.week("2025-W11", limit=5, sort="trending").items]
    assert _ids(hot) != _ids(week)[:5]  # trending differs from plain upvotes on this week


def test_daily_papers_without_a_period_are_the_newest_days_or_trending(
    client: TestClient, web_app: App
) -> None:
    latest = web_app.catalogue.feeds.day(None)
    body = client.get("/api/daily_papers", params={"limit": 100}).json()
    assert _ids(body)[: latest.total] == [i.paper.id for i in latest.items]
    assert body[latest.total]["publishedAt"] == hf_time(latest.prev_day)  # type: ignore[arg-type]
    trending = client.get("/api/daily_papers", params={"sort": "trending", "limit": 7}).json()
    assert _ids(trending) == [i.paper.id for i in web_app.catalogue.feeds.trending(7).items]


def test_submitter_filter_matches_nothing(client: TestClient) -> None:
    assert client.get("/api/daily_papers", params={"submitter": "akhaliq"}).json() == []


def test_paper_info_accepts_any_id_spelling(client: TestClient, hf_records: dict[str, Any]) -> None:
    rec = hf_records["2503.10613"]
    for spelling in ["2503.10613", "2503.10613v3", "arXiv:2503.10613"]:
        response = client.get(f"/api/papers/{spelling}")
        assert response.status_code == 200
        body = response.json()
        assert body["id"] == "2503.10613"
        assert body["title"] == rec["title"]
        assert body["summary"] == rec["abstract"]
        assert [a["name"] for a in body["authors"]] == rec["authors"]
        assert body["upvotes"] == rec["upvotes"]
        assert body["submittedOnDailyAt"] == "2025-03-14T00:00:00.000Z"


def test_all_papers_pages_follow_the_link_header(client: TestClient, web_app: App) -> None:
    expected = [p.id for p in web_app.catalogue.feeds.papers_page(None, 100).items]
    expected += [
        p.id
        for p in web_app.catalogue.feeds.papers_page(
            web_app.catalogue.feeds.papers_page(None, 100).next_cursor, 100
        ).items
    ]
    seen: list[str] = []
    url: str | None = "/api/papers?limit=50"
    for _ in range(4):
        assert url is not None
        response = client.get(url)
        assert response.status_code == 200
        seen += [p["id"] for p in response.json()]
        link = response.headers["link"]
        match = re.fullmatch(r'<([^>]+)>; rel="next"', link)
        assert match
        parts = urlsplit(match[1])
        assert parse_qs(parts.query)["limit"] == ["50"]
        url = f"{parts.path}?{parts.query}"
    assert seen == expected


def test_the_last_page_has_no_next_link(client: TestClient, web_app: App) -> None:
    total = web_app.core.store.stats().papers
    cursor = None
    pages = 0
    while True:
        page = web_app.catalogue.feeds.papers_page(cursor, 100)
        pages += 1
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    response = client.get(
        "/api/papers", params={"cursor": cursor, "limit": 100} if cursor else {"limit": 100}
    )
    assert "link" not in response.headers
    assert pages == -(-total // 100)


def test_paper_markdown(client: TestClient, hf_records: dict[str, Any]) -> None:
    rec = hf_records["2503.10613"]
    response = client.get("/papers/2503.10613v1.md")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/markdown")
    text = response.text
    assert text.startswith("# CoSTAast: Cost-Sensitive Toolpath Agent for Multi-turn Image Editing\n")
    assert "## Abstract" in text
    assert rec["abstract"][:80] in text
    assert "- **arXiv:** [2503.10613](https://arxiv.org/abs/2503.10613v1)" in text
    assert "**On the daily feed:** 2025-03-14" in text
    assert "http://testserver/papers/2503.10613" in text


def test_markdown_escapes_hostile_titles() -> None:
    from paperfeed.domain.feed import PaperDetail
    from paperfeed.mcp.paper_markdown import paper_markdown

    paper = Paper(
        id="2503.00001",
        title="[click](javascript:alert(1)) <img src=x> # not a heading",
        abstract="# Heading?\n<script>x</script> keeps $\\alpha$ LaTeX",
        authors=("A *bold* author",),
    )
    text = paper_markdown(PaperDetail(paper, None, ()), "https://example.org/papers/2503.00001")
    first = text.splitlines()[0]
    assert first.startswith("# \\[click\\](javascript:alert(1)) \\<img src=x\\> \\# not")
    assert "<script>" not in text
    assert "\n\\# Heading?" in text
    assert "$\\alpha$" in text
    assert "A \\*bold\\* author" in text


def test_highlight_escapes_and_merges_spans() -> None:
    text = "Attention <is> all you need"
    spans = (Span(0, 9), Span(5, 9), Span(11, 13), Span(30, 40), Span(4, 2))
    assert highlight(text, spans) == "<mark>Attention</mark> &lt;<mark>is</mark>&gt; all you need"
    assert highlight("a & b", ()) == "a &amp; b"


def test_openapi_documents_every_endpoint(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    paths = set(spec["paths"])
    assert {
        "/api/daily_papers",
        "/api/papers/search",
        "/api/papers",
        "/api/papers/{paper_id}",
        "/api/papers/{paper_id}/similar",
        "/papers/{paper_id}.md",
        "/rss/daily",
        "/atom/trending",
    } <= paths
    assert client.get("/docs").status_code == 200


def test_every_response_says_how_long_the_server_took(client: TestClient) -> None:
    for url in ("/api/daily_papers?limit=1", "/api/papers/2503.99999", "/rss/trending"):
        timing = client.get(url).headers["server-timing"]
        match = re.fullmatch(r"app;dur=(\d+\.\d\d)", timing)
        assert match, timing
        assert 0 < float(match[1]) < 10_000


def test_search_items_carry_highlights_from_the_hits(client: TestClient, web_app: App) -> None:
    query = "multi-turn image editing"
    body = client.get("/api/papers/search", params={"q": query, "limit": 5}).json()
    hits = web_app.search.hybrid.search(query, limit=5).hits
    assert _ids(body) == [h.paper.id for h in hits]
    assert body
    for item, hit in zip(body, hits, strict=True):
        assert item["highlightedTitle"] == highlight(hit.paper.title, hit.title_spans)
        assert item["highlightedSummary"] == highlight(hit.paper.abstract, hit.abstract_spans)
        assert re.sub(r"</?mark>", "", item["highlightedTitle"]) == html.escape(item["title"], quote=False)
    assert "<mark>" in body[0]["highlightedTitle"] + body[0]["highlightedSummary"]


def test_search_without_a_query_lists_the_newest_papers(client: TestClient, web_app: App) -> None:
    body = client.get("/api/papers/search", params={"limit": 5}).json()
    assert _ids(body) == [i.paper.id for i in web_app.catalogue.feeds.recent(limit=5)]


def test_similar_papers_follow_the_search_service(client: TestClient, web_app: App) -> None:
    # This store has no vector index: the similar papers are the keyword list's, with no similarity.
    missing = client.get("/api/papers/2503.99999/similar")
    assert missing.status_code == 404
    response = client.get("/api/papers/2503.10613v2/similar", params={"limit": 5})
    assert response.status_code == 200
    body = response.json()
    hits = web_app.search.hybrid.similar("2503.10613", limit=5)
    assert _ids(body) == [h.paper.id for h in hits]
    assert all(item["similarity"] is None for item in body)
    assert "2503.10613" not in _ids(body)
