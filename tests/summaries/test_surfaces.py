"""The one-line summary on every surface, served for real (uvicorn on loopback): the JSON API's field, a
card and the paper page in chromium, the RSS item and the Markdown page; Hugging Face's own summary stays
Hugging Face's. The store is the facets corpus (tests/facets/support.py) plus one paper with HF's summary,
its sentences indexed by the real sentence pass (roles by place) and the shipped selection rule."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import feedparser
import httpx
import pytest

from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Listing, Paper
from paperfeed.settings import Settings
from tests.facets.support import ME, ROWS, facet_app
from tests.mcp_server.conftest import http_client, run_async
from tests.support.browser import watch_problems
from tests.support.live_server import live_server

HF = "2501.00007"
DAY = date(2025, 1, 7)
HF_SUMMARY = "Sparse mixtures of experts cut the cost of protein language models by half."
HF_PAPER = Paper(
    id=HF,
    title="Protein language models with sparse experts",
    abstract="Protein language models are costly to run. We route tokens to sparse experts. "
    "Inference costs half as much at equal perplexity.",
    authors=("Grace Hopper",),
    categories=("cs.LG",),
    published=datetime(2025, 1, 7, tzinfo=UTC),
    ai_summary=HF_SUMMARY,
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, str]:
    """The settings and ME's extracted line, as the sentence pass stored it."""
    app = facet_app(tmp_path_factory.mktemp("summaries"))
    try:
        listed = [Listing(DAY, pid, "hf-daily", upvotes=3, rank=n) for n, pid in enumerate((ME, HF))]
        result = app.core.store.apply_batch(Batch(papers=[HF_PAPER], listings=listed))
        app.indexes.keyword.on_papers_changed(result)
        app.indexes.keyword.flush()
        app.indexes.indexer.current().run()
        app.indexes.sentence_indexer.current().run()
        mine = app.core.store.get_paper(ME)
        assert mine is not None
        assert mine.extracted_summary is not None
        hf = app.core.store.get_paper(HF)
        assert hf is not None
        assert hf.extracted_summary is not None  # chosen too, but HF's own is the one shown
        return app.settings, mine.extracted_summary  # type: ignore[return-value]
    finally:
        app.close()


@pytest.fixture(scope="module")
def url(served: tuple[Settings, str]) -> Iterator[str]:
    with live_server(served[0]) as found:
        yield found


@pytest.fixture(scope="module")
def line(served: tuple[Settings, str]) -> str:
    return served[1]


def test_the_line_is_a_sentence_of_the_abstract(line: str) -> None:
    abstract = {pid: text for pid, _, text in ROWS}[ME]
    assert line in abstract
    assert line != abstract


def test_api_field(url: str, line: str) -> None:
    mine = httpx.get(f"{url}/api/papers/{ME}")
    assert mine.status_code == 200
    assert mine.json()["oneLineSummary"] == {"text": line, "source": "extracted"}
    assert "ai_summary" not in mine.json()
    theirs = httpx.get(f"{url}/api/papers/{HF}").json()
    assert theirs["ai_summary"] == HF_SUMMARY
    assert theirs["oneLineSummary"] == {"text": HF_SUMMARY, "source": "hugging_face"}
    listed = httpx.get(f"{url}/api/daily_papers", params={"date": DAY.isoformat()})
    assert listed.status_code == 200
    by_id = {item["paper"]["id"]: item["paper"] for item in listed.json()}
    assert by_id[ME]["oneLineSummary"] == {"text": line, "source": "extracted"}
    assert by_id[HF]["oneLineSummary"] == {"text": HF_SUMMARY, "source": "hugging_face"}
    schema = httpx.get(f"{url}/openapi.json").json()["components"]["schemas"]
    assert schema["OneLineSummary"]["properties"]["source"]["enum"] == ["hugging_face", "extracted"]


def test_rss_item_carries_the_labelled_line(url: str, line: str) -> None:
    answer = httpx.get(f"{url}/rss/search", params={"q": "protein"})
    assert answer.status_code == 200
    feed = feedparser.parse(answer.content)
    items = {e.link.rsplit("/", 1)[-1]: e for e in feed.entries}
    assert f"<p>Extracted from the abstract: {line}</p>" in items[ME].description
    assert f"<p>AI summary by Hugging Face: {HF_SUMMARY}</p>" in items[HF].description
    assert "Extracted from the abstract" not in items[HF].description


def test_mcp_tools_carry_the_line_with_its_source(url: str, line: str) -> None:
    """get_paper's structured answer and every listed paper say the line and whose it is, over the
    official MCP client on the served endpoint."""

    async def main() -> None:
        async with http_client(f"{url}/mcp") as client:
            mine = await client.call_tool("get_paper", {"paper_id": ME})
            assert mine.structured_content is not None
            assert mine.structured_content["summary"] == {"text": line, "source": "extracted"}
            theirs = await client.call_tool("get_paper", {"paper_id": HF})
            assert theirs.structured_content is not None
            assert theirs.structured_content["summary"] == {"text": HF_SUMMARY, "source": "hugging_face"}
            listed = await client.call_tool("daily_papers", {"date": DAY.isoformat()})
            assert listed.structured_content is not None
            by_id = {p["id"]: p for p in listed.structured_content["papers"]}
            assert by_id[ME]["summary"] == {"text": line, "source": "extracted"}
            assert by_id[HF]["summary"] == {"text": HF_SUMMARY, "source": "hugging_face"}

    run_async(main)


def test_markdown_page(url: str, line: str) -> None:
    mine = httpx.get(f"{url}/papers/{ME}.md").text
    assert f"## In one line\n\n{line}\n\n*Extracted from the abstract, not generated.*" in mine
    theirs = httpx.get(f"{url}/papers/{HF}.md").text
    assert "## In one line" not in theirs
    assert f"## AI summary\n\n{HF_SUMMARY}" in theirs


def test_card_and_paper_page_in_a_browser(url: str, line: str, chromium_browser: Any) -> None:
    page = chromium_browser.new_page()
    problems = watch_problems(page)
    try:
        for path in (f"/papers/date/{DAY.isoformat()}", "/search?q=protein"):  # a feed's card, a search hit
            page.goto(f"{url}{path}")
            card = page.locator("article.card", has=page.locator(f'h2 a[href="/papers/{ME}"]'))
            mine = card.locator(".one-line")
            assert mine.get_attribute("data-source") == "extracted", path
            assert mine.locator(".one-line-source").inner_text() == "Extracted from the abstract"
            assert " ".join(mine.inner_text().split()) == f"{line} Extracted from the abstract"
            assert mine.is_visible()
            hf_card = page.locator("article.card", has=page.locator(f'h2 a[href="/papers/{HF}"]'))
            theirs = hf_card.locator(".one-line")
            assert theirs.get_attribute("data-source") == "hugging_face", path
            assert " ".join(theirs.inner_text().split()) == f"{HF_SUMMARY} AI summary by Hugging Face"

        page.goto(f"{url}/papers/{ME}")
        section = page.locator("section.one-line-section")
        assert (
            section.locator("h2").inner_text() == "In one line (extracted from the abstract, not generated)"
        )
        assert section.locator("p.one-line").inner_text() == line
        page.goto(f"{url}/papers/{HF}")
        assert page.locator("section.one-line-section").count() == 0
        assert page.locator("#summary-title").inner_text() == "AI summary (generated by Hugging Face)"
        assert HF_SUMMARY in page.locator("section[aria-labelledby=summary-title]").inner_text()
        assert problems == []
    finally:
        page.close()


def test_no_line_without_sentences(tmp_path: Path) -> None:
    """Before the sentence pass has run, a paper shows no extracted line anywhere (nothing made up)."""
    app = facet_app(tmp_path, sentences=False)
    try:
        paper = app.core.store.get_paper(ME)
        assert paper is not None
        assert (paper.extracted_summary, paper.one_line) == (None, None)
    finally:
        app.close()
