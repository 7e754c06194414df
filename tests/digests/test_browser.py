"""Subscribe → confirm (the link read from the captured mail) → unsubscribe, in a real browser.

Debian's chromium through Playwright against the real app under uvicorn, its mail going to the recording
SMTP server; fails on any console error or page error. Screenshots go to ``test-artifacts/digests/``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from paperfeed.bootstrap import build_app
from paperfeed.domain.digest import SubscriptionStatus
from tests.support.digests import digest_settings, load_papers
from tests.support.live_server import live_server
from tests.support.smtp_server import SmtpTestServer

pytestmark = pytest.mark.slow

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "digests"


@pytest.fixture
def page(chromium_browser: Any) -> Iterator[Any]:
    """A fresh context of the session's chromium (a second ``sync_playwright`` in this process would fail
    while the session one runs); fails the test on any console or page error."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    context = chromium_browser.new_context(viewport={"width": 1100, "height": 1000})
    context.set_default_timeout(15_000)
    tab = context.new_page()
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    try:
        yield tab
    finally:
        context.close()
    assert not errors, errors


def test_subscribe_confirm_from_the_mail_then_unsubscribe(
    tmp_path: Path, smtp_server: SmtpTestServer, page: Any
) -> None:
    settings = digest_settings(tmp_path / "data", smtp_server, base_url=None)  # links: the server's own URL
    app = build_app(settings)
    try:
        load_papers(app)
        with live_server(settings) as url:
            page.goto(f"{url}/digest")
            page.fill("#d-email", "browser@example.org")
            page.check("input[name=cadence][value=weekdays]")
            page.select_option("#d-hour", "8")
            page.select_option("#d-tz", "Europe/Berlin")
            page.check("input[name=sections][value=categories]")
            page.fill("#d-cats", "cs.CL cs.LG")
            page.screenshot(path=str(ARTIFACTS / "subscribe.png"), full_page=True)
            page.get_by_role("button", name="Subscribe").click()
            page.wait_for_load_state()
            assert page.locator("h1").inner_text() == "Check your inbox", page.locator("main").inner_text()

            (mail,) = smtp_server.wait_for(1)
            (link,) = [u for u in mail.links() if "/digest/confirm?t=" in u]
            assert link.startswith(url)
            page.goto(link)
            assert page.locator("h1").inner_text() == "Confirm your digest"
            sub = app.digests.subscriptions.by_email("browser@example.org")
            assert sub is not None
            assert sub.status == SubscriptionStatus.pending  # opening the link changed nothing
            page.screenshot(path=str(ARTIFACTS / "confirm.png"))
            page.get_by_role("button", name="Confirm the subscription").click()
            page.wait_for_load_state()
            assert page.locator("h1").inner_text() == "You are subscribed"
            sub = app.digests.subscriptions.by_email("browser@example.org")
            assert sub is not None
            assert sub.status == SubscriptionStatus.active
            assert sub.preferences.categories == ("cs.CL", "cs.LG")
            assert sub.preferences.timezone == "Europe/Berlin"

            page.get_by_role("link", name="Change your digest").click()
            page.wait_for_url(re.compile(r"/digest/preferences\?t="))
            assert page.locator("#d-cats").input_value() == "cs.CL cs.LG"
            page.screenshot(path=str(ARTIFACTS / "preferences.png"), full_page=True)
            page.get_by_role("link", name="Unsubscribe").click()
            page.wait_for_url(re.compile(r"/digest/unsubscribe\?t="))
            sub = app.digests.subscriptions.by_email("browser@example.org")
            assert sub is not None
            assert sub.status == SubscriptionStatus.active  # still: the page only asks
            page.get_by_role("button", name="Unsubscribe").click()
            page.wait_for_load_state()
            assert page.locator("h1").inner_text() == "You are unsubscribed"
            page.screenshot(path=str(ARTIFACTS / "unsubscribed.png"))
            sub = app.digests.subscriptions.by_email("browser@example.org")
            assert sub is not None
            assert sub.status == SubscriptionStatus.unsubscribed
    finally:
        app.close()
