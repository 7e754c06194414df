"""Sign in → upvote → the count changes → a comment appears sanitised, in a real browser (Debian's chromium
through Playwright) against a live uvicorn server on the real SQLite store.

Screenshots go to ``test-artifacts/web_pages/``; any console error (a CSP violation is one), page error or
dialog (a comment's script running would open one) fails the test.

Playwright's sync API runs one instance per thread, and other modules keep a session-wide one open on the
main thread; this test drives its own chromium from a thread of its own so it runs in any company.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from paperfeed.bootstrap import build_app
from tests.support.browser import CHROMIUM_ARGS, chromium_path, watch_problems
from tests.support.live_server import live_server
from tests.web_pages.conftest import ARTIFACTS

from .conftest import DAY, load_papers, make_settings

pytestmark = pytest.mark.slow

EMAIL = "voter@example.org"
PASSWORD = "correct horse battery"
PAPER = "2501.00202"  # 11 upvotes imported from Hugging Face, second on the day
HOSTILE = (
    "Lovely **lichen** work.\n\n"
    "<script>alert('script ran')</script> <img src=x onerror=\"alert('img ran')\">\n\n"
    "[bad link](javascript:alert('link ran')) and [good link](https://example.org/lichen)"
)


def _with_chromium(run: Callable[[Any], None]) -> None:
    """Call ``run(browser)`` with a chromium driven from a thread of its own (see the module doc)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("the playwright package is missing: pip install -e '.[test]'")
        pytest.skip("the playwright package is not installed (pip install -e '.[test]')")
    executable = chromium_path()

    def work() -> None:
        with sync_playwright() as pw:
            launched = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
            try:
                run(launched)
            finally:
                launched.close()

    with ThreadPoolExecutor(1, thread_name_prefix="playwright") as pool:
        pool.submit(work).result()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    settings = make_settings(
        tmp_path_factory.mktemp("community-browser") / "data", "http://127.0.0.1:9/api/query"
    )
    app = build_app(settings)
    try:
        load_papers(app)
        app.readers.accounts.sign_up(
            EMAIL, PASSWORD, "Vera Voter", client="browser-test", base_url="http://localhost"
        )
        stored = app.readers.accounts.store.user_by_email(EMAIL)
        assert stored is not None
        app.readers.accounts.store.mark_verified(stored.user.id, app.readers.accounts.clock())
    finally:
        app.close()
    with live_server(settings) as url:
        yield url


def test_sign_in_upvote_and_comment(site: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    _with_chromium(lambda browser: _upvote_and_comment(browser, ARTIFACTS, site))


def _upvote_and_comment(browser: Any, artifacts: Path, url: str) -> None:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    problems = watch_problems(page)  # console errors, page errors, dialogs
    vote_form = f'form.vote-form[action^="/papers/{PAPER}/upvote"]'
    try:
        # anonymous: the count is a link to sign in, which brings the reader back to the day
        page.goto(f"{url}/papers/date/{DAY}")
        assert page.locator("form.vote-form").count() == 0
        page.locator(f'article:has(a[href="/papers/{PAPER}"]) a.vote-link').click()
        page.wait_for_url(f"{url}/signin?next=**")
        page.fill("#signin-email", EMAIL)
        page.fill("#signin-password", PASSWORD)
        page.get_by_role("button", name="Sign in", exact=True).click()
        page.wait_for_url(f"{url}/papers/date/{DAY}")

        # signed in: a real form; clicking it upvotes and the page comes back with the new count
        button = page.locator(f"{vote_form} button")
        assert button.get_attribute("aria-pressed") == "false"
        assert page.locator(f"{vote_form} .count").inner_text() == "11"
        page.screenshot(path=str(artifacts / "community-before-vote.png"))
        button.click()
        page.wait_for_url(f"{url}/papers/date/{DAY}")
        page.locator(f'{vote_form} button[aria-pressed="true"]').wait_for()
        assert page.locator(f"{vote_form} .count").inner_text() == "12"
        page.screenshot(path=str(artifacts / "community-after-vote.png"))

        # a comment with script, raw HTML and a javascript: link shows as harmless text and links
        page.goto(f"{url}/papers/{PAPER}")
        assert page.locator(f"{vote_form} .count").inner_text() == "12"
        page.fill("#comment-body", HOSTILE)
        page.get_by_role("button", name="Post comment").click()
        page.wait_for_url(f"{url}/papers/{PAPER}#comment-*")
        comment = page.locator("li.comment").first
        comment.wait_for()
        body = comment.locator(".comment-body")
        assert body.locator("strong").inner_text() == "lichen"
        assert "<script>alert('script ran')</script>" in body.inner_text()
        assert body.locator("script, img").count() == 0
        assert body.locator("a", has_text="bad link").count() == 0  # not a link at all
        good = body.locator("a", has_text="good link")
        assert good.get_attribute("href") == "https://example.org/lichen"
        assert good.get_attribute("rel") == "nofollow noopener ugc"
        assert "Vera Voter" in comment.locator(".comment-author").inner_text()
        comment.scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts / "community-comment.png"), full_page=True)
        page.wait_for_timeout(300)  # time for an injected script or onerror handler to have fired
    finally:
        context.close()
    assert not problems, problems
