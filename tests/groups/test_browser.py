"""Two readers run a reading group in Debian's chromium (Playwright) against the real app under uvicorn,
mail going to the recording SMTP server: create a group, invite by address, accept the mailed link, queue
papers (from a paper page and from the group page), vote, schedule the most voted paper, keep notes, and
read the calendar feed over HTTP with an independent iCalendar parser, and the weekly group digest goes
out once through the digest ledger and the SMTP server (not again after a restart). Fails on any console
or page error. Screenshots go to ``test-artifacts/groups/``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from ics import Calendar  # type: ignore[import-untyped]

from paperfeed.bootstrap import build_app
from tests.accounts.conftest import PAPER_IDS, load_papers, make_settings
from tests.support.authz import PASSWORD
from tests.support.live_server import live_server
from tests.support.smtp_server import SmtpTestServer

pytestmark = pytest.mark.slow

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "groups"
OWNER, MEMBER = "olga@example.org", "mehdi@example.org"


@pytest.fixture
def contexts(chromium_browser: Any) -> Iterator[tuple[Any, Any, list[str]]]:
    """Two browsers (one per reader) of the session's chromium; any console or page error fails the test."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    made = []
    pages = []
    for _ in range(2):
        context = chromium_browser.new_context(viewport={"width": 1100, "height": 1000})
        context.set_default_timeout(15_000)
        tab = context.new_page()
        tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        tab.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
        made.append(context)
        pages.append(tab)
    try:
        yield pages[0], pages[1], errors
    finally:
        for context in made:
            context.close()
    assert not errors, errors


def _sign_in(page: Any, url: str, email: str) -> None:
    page.goto(f"{url}/signin")
    page.fill("#signin-email", email)
    page.fill("#signin-password", PASSWORD)
    page.click("form.auth-form button[type=submit]")
    page.wait_for_load_state()


def test_two_readers_run_a_journal_club(
    tmp_path: Path, smtp_server: SmtpTestServer, contexts: tuple[Any, Any, list[str]]
) -> None:
    owner, member, _ = contexts
    smtp_server.clear()
    settings = make_settings(tmp_path / "data", smtp_server)
    app = build_app(settings)
    try:
        load_papers(app)
        for email, name in ((OWNER, "Olga"), (MEMBER, "Mehdi")):
            app.readers.accounts.sign_up(email, PASSWORD, name, client="setup", base_url="http://setup")
            app.readers.accounts.store.mark_verified(
                app.readers.accounts.user_by_email(email).id, app.readers.accounts.clock()
            )
        with live_server(settings) as url:
            _sign_in(owner, url, OWNER)
            _sign_in(member, url, MEMBER)

            owner.goto(f"{url}/groups")
            owner.fill("#g-name", "Zebrafish journal club")
            owner.click("text=Create group")
            owner.wait_for_url(re.compile(r".*/groups/\d+\?done=created"))
            group_url = owner.url.split("?")[0]
            owner.fill("#i-email", MEMBER)
            owner.click("text=Send invitation")
            owner.wait_for_url(re.compile(r".*done=invited"))

            mail = next(iter(_wait_mail(smtp_server, MEMBER)))
            link = re.search(r"https?://\S+/groups/invitations/\S+", mail)
            assert link, mail
            member.goto(link.group(0))
            member.screenshot(path=str(ARTIFACTS / "invitation.png"), full_page=True)
            member.click("#accept-invitation")
            member.wait_for_url(re.compile(r".*done=joined"))

            # the member queues a paper from its page, with a note
            member.goto(f"{url}/papers/{PAPER_IDS[0]}")
            member.click("details.queue-for-group summary")
            member.fill("details.queue-for-group input[name=note]", "Three *gaits*")
            member.click("details.queue-for-group button")
            member.wait_for_url(re.compile(r".*done=queued"))
            # the owner queues another from the group page
            owner.goto(group_url)
            owner.fill("#q-paper", PAPER_IDS[1])
            owner.click("text=Add to the queue")
            owner.wait_for_url(re.compile(r".*done=queued"))

            # the member votes for their paper
            member.goto(group_url)
            member.locator(f"li[data-paper='{PAPER_IDS[0]}'] button:has-text('Vote for next')").click()
            member.wait_for_url(re.compile(r".*done=voted"))
            assert "1 vote" in member.locator(f"li[data-paper='{PAPER_IDS[0]}'] .vote-count").inner_text()
            member.screenshot(path=str(ARTIFACTS / "group.png"), full_page=True)

            # the owner schedules the most voted paper, presented by the member
            owner.goto(group_url)
            when = (datetime.now(UTC) + timedelta(days=3)).replace(second=0, microsecond=0)
            owner.fill("#s-when", when.strftime("%Y-%m-%dT%H:%M"))
            owner.select_option("#s-tz", "UTC")
            owner.select_option("#s-presenter", label="Mehdi")
            owner.select_option("#s-paper", "vote")
            owner.click("form[action$='/sessions'] button[type=submit]")
            owner.wait_for_url(re.compile(r".*/sessions/\d+\?done=scheduled"))
            session_url = owner.url.split("?")[0]

            member.goto(session_url)
            member.fill("#notes-body", "## Discussion\n\n- gaits are **three**\n<script>alert(1)</script>")
            member.click("text=Save notes")
            member.wait_for_url(re.compile(r".*done=notes"))
            notes = member.locator("#session-notes")
            assert notes.locator("h2").inner_text() == "Discussion"
            assert notes.locator("strong").inner_text() == "three"
            assert notes.locator("script").count() == 0
            member.screenshot(path=str(ARTIFACTS / "session.png"), full_page=True)
            owner.goto(session_url)
            assert owner.locator("#session-notes h2").inner_text() == "Discussion"

            # the member's calendar feed, over HTTP, read by an independent parser
            member.goto(group_url)
            feed = member.locator("#calendar-link").get_attribute("href")
            ics = httpx.get(url + feed, timeout=10)
            assert ics.status_code == 200
            events = list(Calendar(ics.text).events)
            assert len(events) == 1
            assert events[0].begin.datetime == when
            assert "Zebrafish locomotion" in events[0].name

            # the member asks for the weekly digest; the digests job sends it once, and not again after a
            # restart (each run a new App on the same store, as `paperfeed digest send` is a new process)
            member.goto(group_url)
            member.click("#digest-toggle")
            member.wait_for_url(re.compile(r".*done=saved"))
            assert "You get the weekly group digest" in member.content()
            for _ in range(2):
                job = build_app(settings.model_copy(update={"base_url": url}))
                try:
                    job.digests.sender.run()
                finally:
                    job.close()
            weekly = [m for m in smtp_server.to(MEMBER) if "the week in your reading group" in m.subject]
            assert len(weekly) == 1
            assert "Next session:" in weekly[0].text
            assert not [m for m in smtp_server.to(OWNER) if "the week in your reading group" in m.subject]
    finally:
        app.close()


def _wait_mail(server: SmtpTestServer, to: str, timeout: float = 10.0) -> list[str]:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [m.text for m in server.to(to) if "invitation" in m.subject.lower()]
        if found:
            return found
        time.sleep(0.05)
    pytest.fail(f"no invitation mail to {to}")
