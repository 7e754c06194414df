"""Sign up → confirm through the mailed link → sign in → sign out, in a real browser (Debian's chromium
through Playwright) against a live uvicorn server, with mail caught by a real SMTP server (aiosmtpd).

Screenshots go to ``test-artifacts/web_pages/``; any console error (a CSP violation is one), page error
or dialog fails the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from paperfeed.bootstrap import build_app
from tests.support.browser import watch_problems
from tests.support.live_server import live_server
from tests.support.smtp_server import SmtpTestServer, smtp_test_server
from tests.web_pages.conftest import artifacts  # noqa: F401  (session fixture, shared)

from .conftest import Mailbox, load_papers, make_settings

pytestmark = pytest.mark.slow

EMAIL = "browser@example.org"
PASSWORD = "correct horse battery"
NAME = "<b>Bea</b> Browser"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, SmtpTestServer]]:
    with smtp_test_server() as smtp:
        settings = make_settings(tmp_path_factory.mktemp("accounts-browser"), smtp)
        app = build_app(settings)
        try:
            load_papers(app)
        finally:
            app.close()
        with live_server(settings) as url:
            yield url, smtp


def test_sign_up_confirm_sign_in_sign_out(
    chromium_browser: Any,
    artifacts: Path,  # noqa: F811
    site: tuple[str, SmtpTestServer],
) -> None:
    url, smtp = site
    context = chromium_browser.new_context(viewport={"width": 1100, "height": 850})
    context.set_default_timeout(15_000)
    page = context.new_page()
    problems = watch_problems(page)  # console errors, page errors, dialogs
    try:
        page.goto(url + "/")
        page.get_by_role("link", name="Sign in", exact=True).click()
        page.wait_for_url(f"{url}/signin**")
        page.get_by_role("link", name="Create an account").click()
        page.fill("#signup-email", EMAIL)
        page.fill("#signup-name", NAME)
        page.fill("#signup-password", PASSWORD)
        page.screenshot(path=str(artifacts / "accounts-signup.png"))
        page.get_by_role("button", name="Create account").click()
        page.get_by_role("heading", name="Check your inbox").wait_for()

        link = Mailbox(smtp).link(EMAIL, "confirm your email", "/verify")
        page.goto(url + link)
        page.screenshot(path=str(artifacts / "accounts-confirm.png"))
        page.get_by_role("button", name="Confirm my email address").click()
        page.wait_for_url(f"{url}/signin?done=verified")
        assert "confirmed" in page.locator('[role="status"]').inner_text()

        page.fill("#signin-email", EMAIL)
        page.fill("#signin-password", PASSWORD)
        page.get_by_role("button", name="Sign in", exact=True).click()
        page.wait_for_url(f"{url}/")
        menu = page.locator("details.user-menu summary")
        assert menu.inner_text().endswith(NAME)  # shown as text, not markup
        assert page.locator("details.user-menu b").count() == 0
        menu.click()
        page.screenshot(path=str(artifacts / "accounts-signed-in-menu.png"))
        page.get_by_role("link", name="Account").click()
        page.wait_for_url(f"{url}/account")
        page.fill("#token-name", "browser test")
        page.get_by_role("button", name="Create token").click()
        token = page.locator("#new-token").inner_text()
        assert token.startswith("pf_")
        page.screenshot(path=str(artifacts / "accounts-settings.png"), full_page=True)

        page.locator("details.user-menu summary").click()
        page.get_by_role("button", name="Sign out", exact=True).click()
        page.wait_for_url(f"{url}/?done=signed-out")
        assert page.get_by_role("link", name="Sign in", exact=True).is_visible()
        assert page.goto(url + "/account").url.startswith(f"{url}/signin?next=/account")
    finally:
        context.close()
    assert not problems, problems
