"""A paper's Markdown (``/papers/{id}.md``, MCP ``get_paper`` and ``paper://``) makes no link or image out
of an abstract or AI summary: authors and models write those, and a ``javascript:`` link or a remote image
an assistant's viewer loads by itself would be a click or a tracking and exfiltration channel. Checked by
parsing the answer with a real CommonMark parser (markdown-it-py): the only links are those paperfeed
writes, there is no image at all, and the hostile text still reads as text."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx2
import pytest
from fastapi.testclient import TestClient
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from paperfeed.bootstrap import build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.settings import Settings
from paperfeed.web import create_app
from tests.mcp_server.conftest import run_async
from tests.support.live_server import live_server

HOSTILE = "\n".join(
    [
        "We show [click here](javascript:alert(document.cookie)) and ![pixel](http://evil.example/p.png?c=1).",
        'Also [a titled one](https://evil.example "t"), ![ref image][img] and [ref link][lnk] and [img].',
        "",
        "[img]: http://evil.example/ref.png",
        "[lnk]: javascript:alert(2)",
        "   [indented]: http://evil.example/indented",
        "<http://evil.example/autolink> <javascript:alert(3)> <img src=x onerror=alert(4)>",
        "Nested [[x]](javascript:alert(5)) and math $f[x](y) = [0,1]$ stay readable.",
        "![](data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=) [x](<javascript:alert(6)>)",
        "[multi",
        "line](javascript:alert(7))",
    ]
)
PAPER = Paper(
    id="2501.00666",
    title="A [title](javascript:alert(8)) with ![img](http://evil.example/t.png)",
    abstract=HOSTILE,
    authors=("Mallory [x](javascript:alert(9))",),
    categories=("cs.CR",),
    published=datetime(2025, 1, 2, tzinfo=UTC),
    updated=datetime(2025, 1, 2, tzinfo=UTC),
    sources={"test": "2025-01-02"},
    ai_summary="A summary with ![beacon](https://evil.example/beacon.gif) and [go](javascript:void(0)).",
    project_page="javascript:alert(10)",
)


def _tokens(markdown: str) -> Iterator[Token]:
    def walk(tokens: list[Token]) -> Iterator[Token]:
        for token in tokens:
            yield token
            yield from walk(token.children or [])

    yield from walk(MarkdownIt("commonmark").parse(markdown))


def _check(markdown: str, site: str) -> None:
    images = [t for t in _tokens(markdown) if t.type == "image"]
    assert images == [], [t.attrs for t in images]
    hrefs = [str(t.attrs.get("href")) for t in _tokens(markdown) if t.type == "link_open"]
    assert hrefs, "paperfeed's own links are still links"
    for href in hrefs:
        assert href.startswith(("https://arxiv.org/", f"{site}/")), href
    html = MarkdownIt("commonmark").render(markdown)
    assert "<img" not in html
    assert "href=" not in html.replace('href="https://arxiv.org/', "").replace(f'href="{site}/', "")
    text = " ".join(t.content for t in _tokens(markdown) if t.type == "text")
    for words in ("click here", "pixel", "evil.example/p.png", "stay readable", "f[x] (y) = [0,1]"):
        assert words in text, (words, text)


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    settings = Settings(
        data_dir=Path(tmp_path_factory.mktemp("md")) / "data", database_url=None, embedding_backend="fake"
    )
    app = build_app(settings)
    try:
        app.core.store.apply_batch(Batch(papers=[PAPER]))
    finally:
        app.close()
    return settings


def test_the_md_page_of_a_hostile_paper_has_no_link_or_image_of_its_text(settings: Settings) -> None:
    with TestClient(create_app(lambda: build_app(settings))) as client:
        got = client.get(f"/papers/{PAPER.id}.md")
    assert got.status_code == 200
    _check(got.text, "http://testserver")


def test_get_paper_and_the_paper_resource_over_mcp_neither(settings: Settings) -> None:
    with live_server(settings) as url:

        async def main() -> None:
            async with (
                httpx2.AsyncClient(timeout=60) as http,
                Client(streamable_http_client(f"{url}/mcp", http_client=http), cache=None) as client,
            ):
                got = await client.call_tool("get_paper", {"paper_id": PAPER.id})
                block = got.content[0]
                _check(getattr(block, "text", ""), url)
                resource = await client.read_resource(f"paper://{PAPER.id}")
                _check(getattr(resource.contents[0], "text", ""), url)

        run_async(main)
