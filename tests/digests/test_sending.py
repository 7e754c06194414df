"""Composing and sending digests through the real SMTP adapter to the recording server."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, date, datetime
from html.parser import HTMLParser

import pytest
from sqlalchemy import select

from paperfeed.adapters.mail import SmtpMailer
from paperfeed.adapters.store.schema_digests import mail_bounces
from paperfeed.bootstrap import App
from paperfeed.domain.digest import Cadence, DigestStatus, Section
from tests.support.digests import BASE_URL, Clock, add_user, subscribe_active
from tests.support.smtp_server import SmtpTestServer


def statuses(app: App) -> dict[str, str]:
    return {e.email: e.status.value for e in app.digests.records.entries()}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_one_multipart_digest_per_subscriber_with_unsubscribe_headers(
    app: App, smtp_server: SmtpTestServer
) -> None:
    subs = [subscribe_active(app, f"reader{i}@example.org") for i in range(3)]
    composed, sent = app.digests.sender.run()
    assert (composed.due, composed.composed, composed.empty) == (3, 3, 0)
    assert sent is not None
    assert sent.sent == 3
    got = smtp_server.wait_for(3)
    assert sorted(m.to for m in got) == sorted(s.email for s in subs)
    mail = smtp_server.to("reader0@example.org")[0]
    assert mail.message.get_content_type() == "multipart/alternative"
    assert mail.subject == "10 papers for Thursday 20 March 2025 · paperfeed"
    unsubscribe = mail["List-Unsubscribe"]
    assert unsubscribe is not None
    assert re.fullmatch(rf"<{re.escape(BASE_URL)}/digest/unsubscribe\?t=[\w.%-]+>", unsubscribe)
    assert mail["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert mail["Message-ID"] is not None
    # The text part has every paper link, absolute, plus the preferences and unsubscribe links.
    links = mail.links()
    papers = [u for u in links if "/papers/" in u]
    assert len(papers) == 10
    assert all(u.startswith(f"{BASE_URL}/papers/2503.") for u in papers)
    assert any(u.startswith(f"{BASE_URL}/digest/preferences?t=") for u in links)
    assert f"<{links[-1]}>" == unsubscribe
    # The HTML part: the same papers, inline styles only, nothing loaded from anywhere.
    assert mail.html is not None
    parser = _Tags()
    parser.feed(mail.html)
    names = {tag for tag, _ in parser.tags}
    assert not names & {"img", "script", "link", "iframe", "style", "object"}
    hrefs = [a["href"] for tag, a in parser.tags if tag == "a"]
    assert sorted(h for h in hrefs if h and "/papers/" in h) == sorted(papers)
    assert "Trending" in mail.html


def test_no_paper_twice_across_digests_and_periods_are_sent_once(
    app: App, smtp_server: SmtpTestServer, clock: Clock
) -> None:
    subscribe_active(app, "ada@example.org", max_items=8)
    app.digests.sender.run()
    again = app.digests.sender.run()  # the same period: nothing new is composed or sent
    assert again[0].due == 0
    assert again[1] is not None
    assert again[1].sent == 0
    clock.advance(days=1)
    app.digests.sender.run()
    first, second = smtp_server.wait_for(2)
    ids = [set(re.findall(r"/papers/([\d.]+)", m.text)) for m in (first, second)]
    assert len(ids[0]) == len(ids[1]) == 8
    assert not ids[0] & ids[1]
    assert [e.period for e in app.digests.records.entries()] == ["2025-03-20", "2025-03-21"]


def test_categories_section_and_an_empty_digest_is_not_sent(
    app: App, smtp_server: SmtpTestServer, clock: Clock
) -> None:
    subscribe_active(app, "cl@example.org", sections=(Section.categories,), categories=("cs.CL",))
    subscribe_active(app, "none@example.org", sections=(Section.categories,), categories=("astro-ph.GA",))
    composed, sent = app.digests.sender.run()
    assert (composed.composed, composed.empty) == (1, 1)
    assert sent is not None
    assert sent.sent == 1
    (mail,) = smtp_server.wait_for(1)
    assert mail.to == "cl@example.org"
    assert "New in cs.CL" in mail.text
    assert statuses(app) == {"cl@example.org": "sent", "none@example.org": "empty"}
    # Thursday 07:00's window is the day before it: papers published or listed since 19 March 07:00
    shown = re.findall(r"/papers/([\d.]+)", mail.text)
    listed = {x.paper_id for x in app.core.store.listings_for_day(date(2025, 3, 19))}
    store_papers = app.core.store.get_papers(shown)
    assert len(store_papers) == len(shown) > 0
    for p in store_papers.values():
        assert "cs.CL" in p.categories
        assert p.published is not None
        assert p.id in listed or datetime(2025, 3, 19, 7, tzinfo=UTC) <= p.published
        assert p.published < datetime(2025, 3, 20, 7, tzinfo=UTC)


def test_length_cap_and_personal_why(app: App, smtp_server: SmtpTestServer) -> None:
    user = add_user(app, "fan@example.org")
    app.readers.library.follow(user, "Ada Lovelace")
    subscribe_active(
        app, "fan@example.org", user_id=user, sections=(Section.authors, Section.trending), max_items=3
    )
    app.digests.sender.run()
    (mail,) = smtp_server.wait_for(1)
    assert len(re.findall(r"/papers/", mail.text)) == 3
    assert "From authors you follow" in mail.text
    assert "Why: by Ada Lovelace, whom you follow" in mail.text
    assert mail.html is not None
    assert "Why: by Ada Lovelace, whom you follow" in mail.html


def test_personal_sections_need_an_account(app: App, smtp_server: SmtpTestServer) -> None:
    subscribe_active(app, "anon@example.org", sections=(Section.for_you, Section.authors))
    composed, _ = app.digests.sender.run()
    assert composed.empty == 1
    assert smtp_server.messages == []


def test_temporary_failures_retry_with_backoff_then_succeed(
    app: App, smtp_server: SmtpTestServer, clock: Clock
) -> None:
    subscribe_active(app, "busy@example.org")
    smtp_server.fail_temporarily(2, recipient="busy@example.org")
    _, first = app.digests.sender.run()
    assert first is not None
    assert first.retry_later == 1
    _, early = app.digests.sender.run()  # the retry is not due yet
    assert early is not None
    assert (early.sent, early.retry_later) == (0, 0)
    clock.advance(seconds=61)
    _, second = app.digests.sender.run()
    assert second is not None
    assert second.retry_later == 1  # 451 again: next try in 5 minutes
    clock.advance(seconds=301)
    _, third = app.digests.sender.run()
    assert third is not None
    assert third.sent == 1
    (entry,) = app.digests.records.entries()
    assert (entry.status, entry.attempts) == (DigestStatus.sent, 3)
    assert len(smtp_server.wait_for(1)) == 1


def test_gives_up_after_max_attempts(app: App, smtp_server: SmtpTestServer, clock: Clock) -> None:
    subscribe_active(app, "down@example.org")
    smtp_server.fail_temporarily(99, recipient="down@example.org", stage="data")
    for _ in range(5):
        app.digests.sender.run()
        clock.advance(hours=3)
    (entry,) = app.digests.records.entries()
    assert (entry.status, entry.attempts) == (DigestStatus.failed, 5)
    assert entry.last_error is not None
    assert "451" in entry.last_error


def test_permanent_refusal_marks_the_address_bouncing(
    app: App, smtp_server: SmtpTestServer, clock: Clock
) -> None:
    subscribe_active(app, "gone@example.org")
    subscribe_active(app, "fine@example.org")
    smtp_server.refuse("gone@example.org")
    _, sent = app.digests.sender.run()
    assert sent is not None
    assert (sent.sent, sent.bounced) == (1, 1)
    assert statuses(app) == {"gone@example.org": "bounced", "fine@example.org": "sent"}
    with app.core.store.engine.connect() as conn:
        assert conn.execute(select(mail_bounces.c.email)).scalars().all() == ["gone@example.org"]
    smtp_server.reset()
    clock.advance(days=1)
    composed, _ = app.digests.sender.run()
    assert composed.skipped_bouncing == 1  # never mailed again
    assert [m.to for m in smtp_server.messages] == ["fine@example.org", "fine@example.org"]


def test_unreachable_server_stops_the_run_and_keeps_everything_pending(
    app: App, smtp_server: SmtpTestServer
) -> None:
    for i in range(3):
        subscribe_active(app, f"r{i}@example.org")
    port = smtp_server.port
    smtp_server.stop()
    _, sent = app.digests.sender.run()
    assert sent is not None
    assert sent.stopped is not None
    assert f":{port} is unreachable" in sent.stopped
    assert set(statuses(app).values()) == {"pending"}
    assert {e.attempts for e in app.digests.records.entries()} == {0}


def test_no_reply_after_the_message_is_not_sent_again(
    app: App, smtp_server: SmtpTestServer, clock: Clock
) -> None:
    assert isinstance(app.mail.mailer, SmtpMailer)
    # the hang ends it; the steps before must answer within it, so seconds, not a fraction
    app.mail.mailer = SmtpMailer(replace(app.mail.mailer.config, timeout=2.0))
    subscribe_active(app, "slow@example.org")
    smtp_server.hang("data")
    _, sent = app.digests.sender.run()
    assert sent is not None
    assert sent.unconfirmed == 1
    assert statuses(app) == {"slow@example.org": "unconfirmed"}
    smtp_server.reset()
    clock.advance(hours=1)
    _, later = app.digests.sender.run()
    assert later is not None
    assert later.sent == 0


def test_unsubscribed_before_sending_is_cancelled(app: App, smtp_server: SmtpTestServer) -> None:
    sub = subscribe_active(app, "quitter@example.org")
    app.digests.sender.run(compose_only=True)
    token = app.mail.signer.sign("unsubscribe", sub.id)
    app.digests.subscriptions.unsubscribe(token)
    _, sent = app.digests.sender.run()
    assert sent is not None
    assert sent.cancelled == 1
    assert smtp_server.messages == []


def test_weekly_digest_covers_the_week(app: App, smtp_server: SmtpTestServer, clock: Clock) -> None:
    subscribe_active(
        app,
        "weekly@example.org",
        cadence=Cadence.weekly,
        weekday=3,
        sections=(Section.categories,),
        categories=("cs",),
        max_items=50,
    )
    app.digests.sender.run()
    (mail,) = smtp_server.wait_for(1)
    assert mail.subject.endswith("for week 12, 2025 · paperfeed")
    assert len(re.findall(r"/papers/", mail.text)) == 10  # one section: at most 10 papers


def test_dry_run_records_and_sends_nothing(app: App, smtp_server: SmtpTestServer) -> None:
    subscribe_active(app, "dry@example.org")
    composed, sent = app.digests.sender.run(dry_run=True)
    assert composed.composed == 1
    assert sent is None
    assert app.digests.records.entries() == []
    assert smtp_server.messages == []


@pytest.mark.parametrize("count", [25])
def test_one_connection_for_a_whole_run(app: App, smtp_server: SmtpTestServer, count: int) -> None:
    for i in range(count):
        subscribe_active(app, f"bulk{i}@example.org")
    app.digests.sender.run()
    got = smtp_server.wait_for(count)
    assert len({m.peer for m in got}) == 1


def test_papers_a_digest_carried_are_known_to_for_you(app: App, smtp_server: SmtpTestServer) -> None:
    """The composition root hands "For you" every paper the reader's digests already mailed them."""
    user = add_user(app, "reader@example.org")
    assert app.digests.records.papers_mailed_to(user) == set()
    subscribe_active(app, "reader@example.org", user_id=user, sections=(Section.trending,), max_items=5)
    app.digests.sender.run()
    (mail,) = smtp_server.wait_for(1)
    mailed = set(re.findall(r"/papers/([\d.]+)", mail.text))
    assert len(mailed) == 5
    assert app.digests.records.papers_mailed_to(user) == mailed
    assert app.readers.recommendations.mailed is not None
    assert app.readers.recommendations.mailed.papers_mailed_to(user) == mailed
