"""The digest's "Rising this week" section, sent through the real SMTP adapter to the recording aiosmtpd
server on loopback: in the text and the HTML part, its plot an inline PNG referenced by ``cid:``.

The world: the digest tests' 60 listed papers (for the Trending section) plus the controlled weeks of
tests/support/rising.py, the galaxy topic bursting in the week of 17 March 2025; "now" is Thursday 20
March 2025, 09:00 UTC, so a 07:00 UTC daily digest is due.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from datetime import UTC, date, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.digest import DEFAULT_SECTIONS, InvalidPreferences, Preferences, Section
from tests.support.digests import BASE_URL, Clock, digest_settings, load_papers, subscribe_active
from tests.support.rising import add_rising_world, expected_lift
from tests.support.smtp_server import Received, SmtpTestServer

WEEK = date(2025, 3, 17)


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2025, 3, 20, 9, 0, tzinfo=UTC))


def _app(tmp_path: Path, smtp_server: SmtpTestServer, clock: Clock, *, burst: int) -> App:
    app = build_app(digest_settings(tmp_path / "data", smtp_server, topics_min_papers=30, topics_k=3))
    load_papers(app)
    add_rising_world(app.core.store, WEEK, burst=burst)
    assert app.catalogue.topics.build().build.topics == 3
    app.digests.sender.clock = clock
    return app


@pytest.fixture
def rising_app(tmp_path: Path, smtp_server: SmtpTestServer, clock: Clock) -> Iterator[App]:
    app = _app(tmp_path, smtp_server, clock, burst=12)
    try:
        yield app
    finally:
        app.close()


@pytest.fixture
def steady_app(tmp_path: Path, smtp_server: SmtpTestServer, clock: Clock) -> Iterator[App]:
    app = _app(tmp_path, smtp_server, clock, burst=0)
    try:
        yield app
    finally:
        app.close()


class _Images(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.images.append(dict(attrs))


def _inline_pngs(mail: Received) -> dict[str, bytes]:
    """Content-ID (without brackets) → the bytes of every image part of the message."""
    out: dict[str, bytes] = {}
    for part in mail.message.walk():
        if part.get_content_maintype() == "image":
            assert part.get_content_type() == "image/png"
            assert (part["Content-Disposition"] or "").startswith("inline")
            cid = str(part["Content-ID"]).strip()
            assert cid.startswith("<")
            assert cid.endswith(">")
            data = part.get_payload(decode=True)
            assert isinstance(data, bytes)
            out[cid[1:-1]] = data
    return out


def test_the_digest_has_the_rising_section_in_text_and_html_with_an_inline_png(
    rising_app: App, smtp_server: SmtpTestServer
) -> None:
    galaxy = rising_app.catalogue.topics.topic_of("rz:galaxy-w0-00")
    assert galaxy is not None
    subscribe_active(rising_app, "reader@example.org", sections=(Section.trending, Section.rising))
    composed, sent = rising_app.digests.sender.run()
    assert (composed.composed, sent.sent if sent else None) == (1, 1)
    [mail] = smtp_server.wait_for(1)
    lift = f"{expected_lift():.1f}× its usual share"
    topic_url = f"{BASE_URL}/topics/{galaxy.id}"

    # The structure: text | (HTML + the PNG) — the image belongs to the HTML alternative.
    assert mail.message.get_content_type() == "multipart/alternative"
    kinds = [p.get_content_type() for p in mail.message.walk()]
    assert kinds == ["multipart/alternative", "text/plain", "multipart/related", "text/html", "image/png"]

    # Plain text: the heading, the topic, its lift in words, the plot in words, the absolute link.
    text = mail.text
    assert "== Rising this week ==" in text
    assert f"* {galaxy.label}: 16 papers this week, {lift}" in text
    assert "this week 67%" in text
    assert topic_url in mail.links()
    assert text.index("== Trending ==") < text.index("== Rising this week ==")

    # HTML: the same, and <img src="cid:…"> whose Content-ID is an inline image/png that Pillow opens.
    assert mail.html is not None
    assert "Rising this week" in mail.html
    assert f'href="{topic_url}"' in mail.html
    assert lift in mail.html
    parser = _Images()
    parser.feed(mail.html)
    [img] = parser.images
    src = img["src"] or ""
    assert src.startswith("cid:")
    pngs = _inline_pngs(mail)
    assert set(pngs) == {src.removeprefix("cid:")}
    data = pngs[src.removeprefix("cid:")]
    with Image.open(io.BytesIO(data)) as image:
        image.verify()  # a whole, valid PNG (checksums included)
    with Image.open(io.BytesIO(data)) as image:
        assert image.format == "PNG"
        assert image.size == (240, 64)  # shown at 120×32, drawn at twice that
        pixels = image.convert("RGB")
        # this week's bar (the last, twice the share of the others) full height in the strong colour;
        # the first bar half as tall in the pale one
        assert pixels.getpixel((223, 12)) == (59, 110, 168)
        assert pixels.getpixel((15, 50)) == (176, 190, 214)
        assert pixels.getpixel((15, 20)) == (255, 255, 255)
    assert img["alt"]
    assert img["alt"].startswith(f"{galaxy.label}: share of all papers per week")
    assert (img["width"], img["height"]) == ("120", "32")
    assert len(data) < 2048
    assert len(mail.data) < 64 * 1024  # the whole message stays small

    # What was sent is what the ledger fixed at composition: the topics are in the row's content.
    [entry] = rising_app.digests.records.entries()
    rising = [s for s in entry.digest.sections if s.section == Section.rising]
    assert [t.topic_id for t in rising[0].topics] == [galaxy.id]
    assert rising[0].title == "Rising this week"
    assert rising[0].entries == ()  # topics, not papers: nothing joins digest_sent_papers


def test_exactly_once_is_unchanged_with_the_section(
    rising_app: App, smtp_server: SmtpTestServer, clock: Clock
) -> None:
    subscribe_active(rising_app, "once@example.org", sections=(Section.trending, Section.rising))
    rising_app.digests.sender.run()
    again = rising_app.digests.sender.run()
    assert again[0].due == 0
    assert again[1] is not None
    assert again[1].sent == 0
    assert len(smtp_server.wait_for(1)) == 1
    assert [e.status.value for e in rising_app.digests.records.entries()] == ["sent"]


def test_no_section_when_nothing_rises(steady_app: App, smtp_server: SmtpTestServer) -> None:
    subscribe_active(steady_app, "steady@example.org", sections=(Section.trending, Section.rising))
    steady_app.digests.sender.run()
    [mail] = smtp_server.wait_for(1)
    assert "Rising" not in mail.text
    assert mail.html is not None
    assert "Rising" not in mail.html
    assert "<img" not in mail.html
    assert _inline_pngs(mail) == {}
    assert [p.get_content_type() for p in mail.message.walk()] == [
        "multipart/alternative",
        "text/plain",
        "text/html",
    ]


def test_a_reader_who_turned_it_off_gets_no_section(rising_app: App, smtp_server: SmtpTestServer) -> None:
    subscribe_active(rising_app, "off@example.org", sections=(Section.trending,))
    rising_app.digests.sender.run()
    [mail] = smtp_server.wait_for(1)
    assert "Rising" not in mail.text
    assert _inline_pngs(mail) == {}


def test_topics_alone_make_no_digest(rising_app: App, smtp_server: SmtpTestServer, clock: Clock) -> None:
    """A digest whose paper sections are empty is settled as empty, rising topics or not: no mail."""
    sub = subscribe_active(
        rising_app,
        "ada@example.org",
        sections=(Section.categories, Section.rising),
        categories=("astro-ph.GA",),
    )
    composed, sent = rising_app.digests.sender.run()
    assert (composed.composed, composed.empty) == (0, 1)
    assert sent is not None
    assert sent.sent == 0
    assert smtp_server.messages == []
    [entry] = rising_app.digests.records.entries()
    assert entry.subscription_id == sub.id
    assert entry.status.value == "empty"


def test_preferences_offer_it_by_default_and_refuse_it_alone() -> None:
    assert Section.rising in DEFAULT_SECTIONS
    with pytest.raises(InvalidPreferences) as refused:
        Preferences(sections=(Section.rising,)).checked()
    assert refused.value.field == "sections"
    assert "at least one section of papers" in refused.value.reason


def test_a_ledger_row_written_before_the_section_existed_still_reads() -> None:
    """Old rows hold sections without "topics": they read back as before."""
    from paperfeed.domain.digest import Digest

    old = [{"section": "trending", "title": "", "entries": [{"id": "2503.00001", "why": None}]}]
    digest = Digest.from_json(old)
    assert digest.paper_ids == ["2503.00001"]
    assert digest.sections[0].topics == ()
    assert Digest.from_json(digest.to_json()) == digest


def test_the_subscribe_form_ticks_it_and_the_preferences_form_offers_it(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from paperfeed.web import create_app

    settings = digest_settings(tmp_path / "data")
    with TestClient(create_app(lambda: build_app(settings))) as client:
        form = client.get("/digest")
    assert form.status_code == 200
    box = re.search(
        r'<input type="checkbox" name="sections" value="rising"[^>]*>\s*Rising this week', form.text
    )
    assert box is not None
    assert " checked" in box.group(0)
    assert "disabled" not in box.group(0)
