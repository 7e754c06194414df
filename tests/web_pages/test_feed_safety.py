"""Every RSS and Atom feed of the app carries hostile source text as text, never as live markup.

A store holding only ``data/hostile.jsonl`` (titles, abstracts and author names with ``<script>``,
``<img onerror>``, entities) plus a reader's public collection and saved-search alert whose names are
markup too. Each feed route the app registers is fetched and parsed by feedparser with its own
sanitiser OFF (a reader that trusts the feed sees exactly this); every decoded text is then parsed as
HTML, as a feed reader renders it, and must hold no script element, no ``on*`` attribute and no
``javascript:`` URL.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from typing import Any

import feedparser
import lxml.html
import pytest
from fastapi.testclient import TestClient

from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.bootstrap import build_app
from paperfeed.domain.search import SearchFilters
from paperfeed.settings import Settings
from paperfeed.web import create_app
from tests.library.conftest import add_user
from tests.support.routes import get_routes

from .conftest import HOSTILE, HOSTILE_DAY

MARKUP = "<img src=x onerror=alert('name-xss')>"


def live_markup(text: str) -> list[str]:
    """What in ``text``, rendered as HTML, could run script."""
    if "<" not in text and "&" not in text:
        return []
    found: list[str] = []
    for node in lxml.html.fragment_fromstring(text, create_parent="div").iter():
        if not isinstance(node.tag, str):
            continue
        if node.tag.lower() in ("script", "iframe", "object", "embed", "svg", "math", "style"):
            found.append(f"<{node.tag}> element")
        for name, value in node.attrib.items():
            if name.lower().startswith("on"):
                found.append(f"{name} attribute on <{node.tag}>")
            if "javascript:" in value.lower().replace(" ", ""):
                found.append(f"javascript: URL in {name}")
    return found


def decoded_texts(parsed: Any) -> Iterator[tuple[str, str]]:
    """(where, decoded value as a reader renders it) of every human-readable text of a parsed feed.

    A value the feed declares plain text (Atom ``type="text"``; feedparser says ``text/plain``) is shown
    as text, so it is escaped here; everything else (RSS's descriptions, and any RSS text feedparser
    finds HTML in) is rendered as HTML by readers and is checked as it stands.
    """

    def shown(holder: Any, key: str) -> str:
        value = str(holder.get(key, ""))
        detail = holder.get(f"{key}_detail") or {}
        return html.escape(value) if detail.get("type") == "text/plain" else value

    feed = parsed.feed
    for key in ("title", "subtitle"):
        if key in feed:
            yield f"feed.{key}", shown(feed, key)
    for i, entry in enumerate(parsed.entries):
        for key in ("title", "summary"):
            if key in entry:
                yield f"entry[{i}].{key}", shown(entry, key)
        for j, content in enumerate(entry.get("content", [])):
            value = content.value
            yield f"entry[{i}].content[{j}]", html.escape(value) if content.type == "text/plain" else value
        for j, author in enumerate(entry.get("authors", [])):
            yield f"entry[{i}].author[{j}]", author.get("name", "")
        for j, tag in enumerate(entry.get("tags", [])):
            yield f"entry[{i}].tag[{j}]", tag.get("term", "")


@pytest.fixture(scope="module")
def feeds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, dict[str, str]]]:
    """A client on the hostile store and the value of each feed route's path parameter."""
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("feed-safety"), database_url=None, embedding_backend="fake"
    )
    app = build_app(settings)
    try:
        assert (
            app.sources.ingest.run(JsonlFileSource(HOSTILE, batch_size=app.settings.batch_size)).rejected == 0
        )
        app.indexes.indexer.current().run()
        reader = add_user(app, "mallory@example.org", "Mallory")
        tag = app.readers.library.create_tag(reader, f"Reading {MARKUP}", public=True)
        for paper_id in ("2405.00001", "2405.00002"):
            app.readers.library.save(reader, paper_id, [tag.name])
        search = app.readers.library.add_search(reader, f"Alert {MARKUP}", "attention", SearchFilters())
        params = {"tag_id": str(tag.id), "token": app.readers.library.feed_token(reader, search.id)}
    finally:
        app.close()
    with TestClient(create_app(lambda: build_app(settings)), follow_redirects=False) as client:
        yield client, params


QUERIES = {"/daily": f"?date={HOSTILE_DAY}", "/search": "?q=attention"}


def test_no_feed_carries_live_markup(feeds: tuple[TestClient, dict[str, str]]) -> None:
    client, params = feeds
    routes = [r.path for r in get_routes(client.app) if r.path.startswith(("/rss/", "/atom/"))]
    assert len(routes) >= 10, routes  # daily, trending, search, collections, alerts; RSS and Atom
    problems: list[str] = []
    for path in routes:
        url = path.format(**params) + QUERIES.get("/" + path.split("/")[2], "")
        got = client.get(url)
        assert got.status_code == 200, (url, got.status_code, got.text[:200])
        parsed = feedparser.parse(got.content, sanitize_html=False)
        assert parsed.bozo == 0, (url, parsed.bozo_exception)
        assert parsed.entries, f"{url}: no entries, so the test proves nothing"
        texts = list(decoded_texts(parsed))
        raw = "\n".join(value for _, value in texts)
        assert "alert(" in raw, f"{url}: the hostile text is not in the feed at all"
        problems += [f"{url} {where}: {p}" for where, value in texts for p in live_markup(value)]
    assert not problems, "\n".join(problems)


def test_the_checker_sees_live_markup() -> None:
    """The oracle above must be able to fail."""
    assert live_markup("<p>We show <img src=x onerror=alert(1)></p>")
    assert live_markup("<script>alert(1)</script>")
    assert live_markup('<a href="javascript:alert(1)">x</a>')
    assert not live_markup("We show &lt;img src=x onerror=alert(1)&gt;")
    assert not live_markup("a < b and c > d")


def test_feed_text_reads_as_the_source_text(feeds: tuple[TestClient, dict[str, str]]) -> None:
    """Escaping must not garble the words: a reader sees the abstract's characters, not entities."""
    client, _ = feeds
    parsed = feedparser.parse(client.get(f"/rss/daily?date={HOSTILE_DAY}").content)
    entry = next(e for e in parsed.entries if e.link.endswith("/2405.00001"))
    text = lxml.html.fragment_fromstring(entry.summary, create_parent="div").text_content()
    assert "We show <img src=x onerror=alert('abstract-xss')> and &amp; entities" in text
