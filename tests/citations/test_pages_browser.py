"""A paper page with references and cited-by in a real browser (Debian's chromium through Playwright,
the session's ``chromium_browser``) against a live uvicorn on a SQLite store holding the graph of
``tests/support/citation_graph.py``: the sections are there, the paging and sorting links work, in-store
entries open their page inside paperfeed. Any console error (a CSP violation is one) fails the test;
waits use locators (``wait_for_function`` with a string is an eval our CSP refuses). Screenshots go to
``test-artifacts/citations/``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.citation_graph import ME, graph_settings
from tests.support.live_server import live_server

pytestmark = pytest.mark.slow

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "citations"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with (
        graph_settings("sqlite", tmp_path_factory.mktemp("graph-browser"), None) as settings,
        live_server(settings) as url,
    ):
        yield url


@pytest.fixture
def page(chromium_browser: Any) -> Iterator[Any]:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    context = chromium_browser.new_context(viewport={"width": 1200, "height": 1000})
    context.set_default_timeout(15_000)
    tab = context.new_page()
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    try:
        yield tab
    finally:
        context.close()
    assert not errors, errors


def test_references_and_cited_by_page_sort_and_link_inside(site: str, page: Any) -> None:
    page.goto(f"{site}/papers/{ME}")
    references = page.locator("section#references")
    cited = page.locator("section#cited-by")
    related = page.locator("section#related")
    for section in (references, cited, related):
        section.wait_for()
    assert "25 references" in page.locator("li.graph-counts").first.inner_text()
    assert references.locator("ol > li").count() == 20
    assert cited.locator("ol > li").count() == 20
    assert "cites it and 7 of its references" in related.inner_text()
    page.screenshot(path=str(ARTIFACTS / "paper-graph.png"), full_page=True)

    references.get_by_role("link", name=re.compile("^Next")).click()
    page.wait_for_url(re.compile(r"refs_page=2"))
    references = page.locator("section#references")
    references.locator("ol > li").first.wait_for()
    assert references.locator("ol > li").count() == 5
    assert page.locator("section#cited-by ol > li").count() == 20  # the other list stays on its page

    # in-store entries link inside paperfeed: open one from the (filtered) list
    references.get_by_role("link", name="in this instance").click()
    page.wait_for_url(re.compile(r"refs_instance=1"))
    entry = page.locator("section#references ol > li a.internal", has_text="Attention is all you need")
    assert entry.get_attribute("href") == "/papers/1706.03762"
    entry.click()
    page.wait_for_url(f"{site}/papers/1706.03762")
    assert page.locator("h1").inner_text() == "Attention is all you need"

    # sorting the cited-by list by date puts the newest citing work first
    page.goto(f"{site}/papers/{ME}?cited_sort=citations#cited-by")
    cited = page.locator("section#cited-by")
    cited.get_by_role("link", name="newest").click()
    page.wait_for_url(re.compile(rf"/papers/{re.escape(ME)}#cited-by$"))
    first = page.locator("section#cited-by ol > li").first
    assert first.locator("a").inner_text() == "Citing work 5"  # dated five days ago: the newest
    page.screenshot(path=str(ARTIFACTS / "cited-by-newest.png"))
