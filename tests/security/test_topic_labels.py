"""Topic labels are derived from paper text (the words of its papers), so they are checked as hostile input
on every surface that shows one (#31, finding 9): the topic pages, the paper page (its topic line and the
map SVG), search's topic filter, the day pages' "Rising this week", the JSON API and the Markdown, and the
digest mail's HTML part sent through the real SMTP adapter.

Every topic of a real build (scikit-learn k-means over synthetic vectors) gets a label made of markup;
HTML answers are parsed (html.parser) and must hold no element or attribute the label brought; JSON must
carry it as a string, and the Markdown as text.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from markdown_it import MarkdownIt
from sqlalchemy import update

from paperfeed.adapters.store.schema_topics import topics
from paperfeed.bootstrap import App, build_app
from paperfeed.domain.digest import Section
from paperfeed.web import create_app
from tests.support.digests import Clock, digest_settings, load_papers, subscribe_active
from tests.support.rising import add_rising_world
from tests.support.smtp_server import SmtpTestServer

HOSTILE = (
    '<script>alert(1)</script><img src=x onerror=alert(2)>"><svg onload=alert(3)>[x](javascript:alert(4))'
)
WEEK = date(2025, 3, 17)


class _Markup(HTMLParser):
    """Every element and attribute of a page, to find what a label may have brought in."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name.startswith("on") or (value or "").strip().lower().startswith("javascript:"):
                self.found.append(f"<{tag} {name}={value!r}>")
        if tag == "script" and not dict(attrs).get("src", "").startswith("/static/"):  # type: ignore[union-attr]
            self.found.append(f"<script {attrs}>")
        if tag == "img" and dict(attrs).get("src") == "x":
            self.found.append("<img src=x>")


def _strings(value: object) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*(_strings(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_strings(v) for v in value)) if value else set()
    return set()


def _no_markup_from_the_label(html: str, where: str) -> None:
    parser = _Markup()
    parser.feed(html)
    assert parser.found == [], (where, parser.found)
    assert "<script>alert(1)" not in html, where
    assert "<svg onload" not in html, where


@pytest.fixture
def hostile_app(tmp_path: Path, smtp_server: SmtpTestServer) -> Iterator[App]:
    settings = digest_settings(tmp_path / "data", smtp_server, topics_min_papers=30, topics_k=3)
    app = build_app(settings)
    try:
        load_papers(app)
        add_rising_world(app.core.store, WEEK, burst=12)
        assert app.catalogue.topics.build().build.topics == 3
        with app.core.store.engine.begin() as conn:
            conn.execute(update(topics).values(label=HOSTILE))
        app.digests.sender.clock = Clock(datetime(2025, 3, 20, 9, 0, tzinfo=UTC))
        yield app
    finally:
        app.close()


def test_a_hostile_label_is_text_on_every_page_api_and_markdown(hostile_app: App) -> None:
    galaxy = hostile_app.catalogue.topics.topic_of("rz:galaxy-w0-00")
    assert galaxy is not None
    assert galaxy.label == HOSTILE
    with TestClient(create_app(lambda: build_app(hostile_app.settings))) as client:
        pages = [
            "/topics",
            f"/topics/{galaxy.id}",
            "/papers/rz:galaxy-w0-00",
            "/search?q=galaxy",
            "/papers/week/2025-W12",
            "/papers/date/2025-03-18",
            "/map",
        ]
        shown = 0
        for path in pages:
            got = client.get(path, headers={"accept": "text/html"})
            assert got.status_code in (200, 404), (path, got.status_code)
            _no_markup_from_the_label(got.text, path)
            shown += "&lt;script&gt;alert(1)&lt;/script&gt;" in got.text
        assert shown >= 3, "the label is shown, escaped, on the topic pages and the paper page"
        for path in (
            "/api/topics",
            f"/api/topics/{galaxy.id}",
            "/api/topics/rising",
            "/api/papers/rz:galaxy-w0-00",
        ):
            got = client.get(path)
            assert got.status_code == 200, (path, got.status_code)
            assert got.headers["content-type"].startswith("application/json")
            assert got.headers["x-content-type-options"] == "nosniff"  # never sniffed as a page
            if path != "/api/topics/rising":  # nothing rises in the real present
                assert HOSTILE in _strings(got.json()), path
        markdown = client.get("/papers/rz:galaxy-w0-00.md").text
    tokens = MarkdownIt("commonmark").parseInline(markdown.split("**Topic:**", 1)[1].split("\n", 1)[0])
    links = [t for token in tokens for t in token.children or [] if t.type == "link_open"]
    hrefs = [str(t.attrs["href"]) for t in links]
    assert f"{hostile_app.settings.base_url}/topics/{galaxy.id}" in hrefs  # the topic and its parent only
    assert all(h.startswith(f"{hostile_app.settings.base_url}/topics/") for h in hrefs), hrefs
    html = MarkdownIt("commonmark").render(markdown)
    _no_markup_from_the_label(html, ".md rendered")


def test_a_hostile_label_in_the_digest_mail_is_text(hostile_app: App, smtp_server: SmtpTestServer) -> None:
    subscribe_active(hostile_app, "reader@example.org", sections=(Section.trending, Section.rising))
    composed, sent = hostile_app.digests.sender.run()
    assert (composed.composed, sent.sent if sent else None) == (1, 1)
    [mail] = smtp_server.wait_for(1)
    assert mail.html is not None
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in mail.html  # shown, as text
    _no_markup_from_the_label(mail.html, "digest html")
    assert HOSTILE in mail.text  # the plain-text part is plain text
