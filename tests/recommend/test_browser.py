"""Sign up → confirm the address → save papers → "For you", in a real browser (Debian's chromium through
Playwright) against a live uvicorn server on a real SQLite store with fake-embedder vectors.

Screenshots go to ``test-artifacts/web_pages/``; any console error, page error or dialog fails the test.
"""

from __future__ import annotations

import email
import re
from collections.abc import Iterator
from email import policy
from pathlib import Path
from typing import Any

import pytest

from paperfeed.bootstrap import build_app
from paperfeed.domain.ingest import Batch
from paperfeed.settings import Settings
from tests.support.browser import watch_problems
from tests.support.live_server import live_server
from tests.web_pages.conftest import artifacts  # noqa: F401  (session fixture, shared)

from .conftest import make_papers, topic_of

pytestmark = pytest.mark.slow

EMAIL = "reader@example.org"
PASSWORD = "correct horse battery"
SAVES = ["2606.00070", "2606.00072"]  # two old "graphs" papers: outside the window, not recommendable


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Settings]]:
    folder = tmp_path_factory.mktemp("for-you-browser")
    settings = Settings(data_dir=folder, embedding_backend="fake", keyword_engine="fts5", debug=True)
    app = build_app(settings)
    try:
        app.core.store.apply_batch(Batch(papers=make_papers()))
        app.indexes.indexer.current().run()
    finally:
        app.close()
    with live_server(settings) as url:
        yield url, settings


def _link_in_outbox(outbox: Path, path: str) -> str:
    """The path and query of the link to ``path`` in the newest mail written to the outbox."""
    mails = sorted(outbox.glob("*.eml"), key=lambda p: p.stat().st_mtime)
    assert mails, f"no mail in {outbox}"
    message = email.message_from_bytes(mails[-1].read_bytes(), policy=policy.default)
    body = message.get_body(preferencelist=("plain",))
    assert body is not None
    found = re.search(rf"https?://[^\s]+({re.escape(path)}\?[^\s]+)", body.get_content())
    assert found, body.get_content()
    return found.group(1)


def test_sign_up_save_and_see_for_you(
    chromium_browser: Any,
    artifacts: Path,  # noqa: F811
    site: tuple[str, Settings],
) -> None:
    url, settings = site
    context = chromium_browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    problems = watch_problems(page)  # console errors, page errors, dialogs
    try:
        page.goto(f"{url}/signup")
        page.fill("#signup-email", EMAIL)
        page.fill("#signup-name", "Ada")
        page.fill("#signup-password", PASSWORD)
        page.click("button:has-text('Create account')")
        page.wait_for_selector("text=Message kept for the administrator")  # no mail server here

        page.goto(url + _link_in_outbox(settings.data_dir / "outbox", "/verify"))
        page.click("form button.primary")
        page.wait_for_url(re.compile(r"/signin"))
        page.fill("#signin-email", EMAIL)
        page.fill("#signin-password", PASSWORD)
        page.click("button:has-text('Sign in')")
        page.wait_for_selector("summary:has-text('Ada')")

        # Before saving anything: trending, and how to start.
        page.click("nav >> text=For you")
        page.wait_for_selector("h1:has-text('For you')")
        assert "Save papers you like" in page.inner_text("main")
        page.screenshot(path=str(artifacts / "for-you-new-reader.png"))

        for paper_id in SAVES:
            page.goto(f"{url}/papers/{paper_id}")
            page.check(".library-panel input[name=tags][value=Saved]")
            page.click(".library-panel button.primary")
            page.wait_for_selector(".library-panel button:has-text('Update tags')")

        page.click("nav >> text=For you")
        page.wait_for_selector("p.why")
        main = page.inner_text("main")
        assert "Save 3 more" in main  # two saves: ranked by similarity until there are five
        links = page.eval_on_selector_all(".card-title a", "els => els.map(e => e.getAttribute('href'))")
        ids = [href.removeprefix("/papers/") for href in links]
        assert len(ids) == 30
        assert not set(ids) & set(SAVES)
        assert [topic_of(p) for p in ids[:10]] == ["graphs"] * 10
        why = page.inner_text("ol.cards li:first-child p.why")
        assert re.fullmatch(r"Why:\s*similar to .+ you saved", " ".join(why.split())), why
        page.screenshot(path=str(artifacts / "for-you-after-saving.png"), full_page=False)

        # "Not interested" on the first pick: back on the feed, it is gone and never comes back.
        page.click("ol.cards li:first-child button:has-text('Not interested')")
        page.wait_for_url(re.compile(r"/for-you"))
        page.wait_for_selector("p.why")
        after = page.eval_on_selector_all(".card-title a", "els => els.map(e => e.getAttribute('href'))")
        assert f"/papers/{ids[0]}" not in after
        assert after[0] == f"/papers/{ids[1]}"
    finally:
        context.close()
    assert not problems, problems
