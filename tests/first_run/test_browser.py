"""The first-run page and the drag-and-drop import in a real browser (Debian's chromium through
Playwright) against a live uvicorn server on an empty store.

A file is dropped the way a person's drop arrives: a ``drop`` event carrying a ``DataTransfer`` with
the file, dispatched on the page; the picker fallback is driven with ``set_input_files``. Any console
error (a CSP violation is one) or page error fails the test. Screenshots go to
``test-artifacts/web_pages/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from paperfeed.bootstrap import App, build_app
from paperfeed.settings import Settings
from paperfeed.web.security import SESSION_COOKIE
from tests.support.live_server import live_server
from tests.web_pages.conftest import artifacts  # noqa: F401  (session fixture, shared)

from .conftest import jsonl_bytes, rec
from .test_upload import BIB

pytestmark = pytest.mark.slow


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, App]]:
    settings = Settings(data_dir=tmp_path / "data", embedding_backend="fake")
    app = build_app(settings)
    try:
        with live_server(settings) as url:
            yield url, app
    finally:
        app.close()


def _session(app: App, email: str, role: str) -> str:
    accounts = app.readers.accounts
    accounts.sign_up(email, None, None, client="browser-test", base_url="http://127.0.0.1")
    user = accounts.user_by_email(email)
    accounts.store.mark_verified(user.id, accounts.clock())
    if role != "user":
        accounts.set_role(email, role)
    return accounts.create_session(accounts.user_by_email(email)).session


def _page(browser: Any, url: str, session: str | None, problems: list[str]) -> Any:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    context.set_default_timeout(15_000)
    if session:
        context.add_cookies([{"name": SESSION_COOKIE, "value": session, "url": url}])
    page = context.new_page()
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    return page


def test_an_admin_drops_a_file_on_the_first_run_page(
    chromium_browser: Any,
    artifacts: Path,  # noqa: F811
    served: tuple[str, App],
) -> None:
    url, app = served
    problems: list[str] = []
    page = _page(chromium_browser, url, _session(app, "admin@example.org", "admin"), problems)
    page.goto(url + "/")
    assert page.locator("h1").inner_text() == "Welcome to paperfeed"
    assert page.locator("form[data-dropzone] input[type=file]").count() == 1
    page.screenshot(path=str(artifacts / "first-run-admin.png"), full_page=True)
    records = [
        rec("2501.00101", title="Dropped zebrafish paper", daily_date="2025-01-06", upvotes=4),
        rec("2501.00102", title="Dropped glacier paper", daily_date="2025-01-06"),
    ]
    transfer = page.evaluate_handle(
        """(text) => {
            const transfer = new DataTransfer();
            transfer.items.add(new File([text], "dropped.jsonl", {type: "application/json"}));
            return transfer;
        }""",
        jsonl_bytes(records).decode(),
    )
    page.dispatch_event("main", "dragenter", {"dataTransfer": transfer})
    assert "dragging" in (page.locator("form[data-dropzone]").get_attribute("class") or "")
    with page.expect_navigation():
        page.dispatch_event("main", "drop", {"dataTransfer": transfer})
    assert page.url == url + "/admin/import"
    report = " ".join(page.locator("#import-report").inner_text().split())
    assert report == "dropped.jsonl (JSONL): 2 papers added, 0 updated, 0 unchanged."
    assert app.core.store.stats().papers == 2
    page.goto(url + "/")
    assert page.locator("h1").inner_text() != "Welcome to paperfeed"
    titles = page.locator("ol.cards h2, ol.cards h3").all_inner_texts()
    assert any("Dropped zebrafish paper" in t for t in titles), titles
    page.screenshot(path=str(artifacts / "first-run-after-drop.png"), full_page=True)
    assert problems == []


def test_the_file_picker_and_a_rejected_entry(
    chromium_browser: Any,
    served: tuple[str, App],
    tmp_path: Path,
) -> None:
    url, app = served
    problems: list[str] = []
    page = _page(chromium_browser, url, _session(app, "admin@example.org", "admin"), problems)
    page.goto(url + "/admin/import")
    refs = tmp_path / "refs.bib"
    refs.write_text(BIB)
    page.set_input_files("form[data-dropzone] input[type=file]", str(refs))
    assert page.locator(".dropzone-status").inner_text() == "refs.bib is ready: press Import."
    with page.expect_navigation():
        page.get_by_role("button", name="Import").click()
    report = " ".join(page.locator("#import-report").inner_text().split())
    assert report.startswith("refs.bib (BibTeX): 1 paper added, 0 updated, 0 unchanged; 1 record rejected")
    rejects = page.locator("#import-rejects li").all_inner_texts()
    assert len(rejects) == 1
    assert rejects[0].startswith("refs.bib:12 (nieve2024glacier): id: no arXiv id")
    assert app.core.store.get_paper("2501.00201") is not None
    # the 422 itself is logged by chromium as a failed load: expected here, nothing else is
    assert [p for p in problems if "status of 422" not in p] == []


def test_a_visitor_sees_how_to_start_but_no_drop_zone(
    chromium_browser: Any,
    artifacts: Path,  # noqa: F811
    served: tuple[str, App],
) -> None:
    url, _app = served
    problems: list[str] = []
    page = _page(chromium_browser, url, None, problems)
    page.goto(url + "/")
    assert page.locator("h1").inner_text() == "Welcome to paperfeed"
    text = page.locator("main").inner_text()
    assert "make run DATA=papers.jsonl.gz" in text
    assert "PAPERFEED_HF_API_URL" in text
    assert page.locator("input[type=file]").count() == 0
    assert (
        page.locator("main").get_by_role("link", name="sign in", exact=True).get_attribute("href")
        == "/signin?next=/"
    )
    page.screenshot(path=str(artifacts / "first-run-visitor.png"), full_page=True)
    assert problems == []
