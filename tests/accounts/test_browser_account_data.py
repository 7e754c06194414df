"""Download my data, then delete my account, in a real browser (Debian's chromium through Playwright)
against a live uvicorn server: the account page's buttons, the download, the confirmation page and the
signed-out end. Screenshots go to ``test-artifacts/web_pages/``; a console error (a CSP violation is one),
page error or dialog fails the test.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from paperfeed.bootstrap import build_app
from tests.support.browser import watch_problems
from tests.support.live_server import live_server
from tests.support.smtp_server import smtp_test_server
from tests.web_pages.conftest import artifacts  # noqa: F401  (session fixture, shared)

from .conftest import PAPER_IDS, load_papers, make_settings

pytestmark = pytest.mark.slow

EMAIL = "leaving@example.org"
PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    with smtp_test_server() as smtp:
        settings = make_settings(tmp_path_factory.mktemp("account-data-browser"), smtp)
        app = build_app(settings)
        try:
            load_papers(app)
            app.readers.accounts.sign_up(EMAIL, PASSWORD, "Leaving", client="setup", base_url="http://x")
            user = app.readers.accounts.store.user_by_email(EMAIL)
            assert user is not None
            app.readers.accounts.store.mark_verified(user.user.id, app.readers.accounts.clock())
            app.readers.library.save(user.user.id, PAPER_IDS[0])
            app.readers.library.set_note(user.user.id, PAPER_IDS[0], "my *note*")
        finally:
            app.close()
        with live_server(settings) as url:
            yield url, tmp_path_factory.mktemp("downloads")


def test_download_my_data_then_delete_my_account(
    chromium_browser: Any,
    artifacts: Path,  # noqa: F811
    site: tuple[str, Path],
) -> None:
    url, downloads = site
    context = chromium_browser.new_context(viewport={"width": 1100, "height": 850}, accept_downloads=True)
    context.set_default_timeout(15_000)
    page = context.new_page()
    problems = watch_problems(page)  # console errors, page errors, dialogs
    try:
        page.goto(url + "/signin")
        page.fill("#signin-email", EMAIL)
        page.fill("#signin-password", PASSWORD)
        page.get_by_role("button", name="Sign in", exact=True).click()
        page.wait_for_url(f"{url}/")
        page.goto(url + "/account")

        with page.expect_download() as info:
            page.get_by_role("button", name="Download my data").click()
        download = info.value
        assert re.fullmatch(r"paperfeed-export-leaving-\d{4}-\d{2}-\d{2}\.zip", download.suggested_filename)
        saved = downloads / download.suggested_filename
        download.save_as(saved)
        with zipfile.ZipFile(saved) as archive:
            library = json.loads(archive.read("library.json"))
            assert library["papers"][0]["note"]["markdown"] == "my *note*"
            assert archive.read("library.bib").decode().startswith("@misc{")

        page.get_by_role("link", name="Delete my account…").click()
        page.wait_for_url(f"{url}/account/delete")
        page.fill("#delete-password", "not my password")
        page.locator("#delete-form").get_by_role("button", name="Delete my account").click()
        assert "nothing was deleted" in page.locator('[role="alert"]').inner_text()
        page.fill("#delete-password", PASSWORD)
        page.screenshot(path=str(artifacts / "accounts-delete.png"), full_page=True)
        page.locator("#delete-form").get_by_role("button", name="Delete my account").click()
        page.wait_for_url(f"{url}/account/deleted")
        assert "deleted" in page.locator('[role="status"]').inner_text()
        page.screenshot(path=str(artifacts / "accounts-deleted.png"))
        assert page.get_by_role("link", name="Sign in", exact=True).is_visible()  # signed out
        assert page.goto(url + "/account").url.startswith(f"{url}/signin?next=/account")
        page.fill("#signin-email", EMAIL)
        page.fill("#signin-password", PASSWORD)
        page.get_by_role("button", name="Sign in", exact=True).click()
        assert "do not match an account" in page.locator('[role="alert"]').inner_text()
    finally:
        context.close()
    # The two refusals (wrong password, sign-in after deletion) are 400 pages, which chromium logs.
    refused = [p for p in problems if "status of 400" in p]
    assert len(refused) == 2, problems
    assert not [p for p in problems if p not in refused], problems
