"""The site's header is one row at 1280 px on every family of pages, for anonymous and signed-in readers
(#30 item 9), and stays usable at a phone's 390 px. Real chromium against a live uvicorn server.

Before, "Sign in" (anonymous) or the search box and the account button (signed in) dropped to a second
row on every page at 1280 px, and at 390 px the menu ran off the screen. A reader with a long name is
signed in here on purpose: the account button must give way (an ellipsis), not the row.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from paperfeed.bootstrap import build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Listing
from paperfeed.settings import Settings
from paperfeed.web.security import SESSION_COOKIE
from tests.community.conftest import add_reader
from tests.support.browser import header_on_one_row, header_row
from tests.support.live_server import live_server
from tests.topics.conftest import add_papers

pytestmark = pytest.mark.slow
DAY = date(2026, 11, 26)
PAGES = [  # one of each family: feeds, trending, search, paper, topics, map, account, library, admin, errors
    "/",
    f"/papers/date/{DAY.isoformat()}",
    "/papers/week/2026-W48",
    "/papers/month/2026-11",
    "/trending",
    "/search",
    "/search?q=protein",
    "/papers/pp:graph-0001",
    "/topics",
    "/map",
    "/digest",
    "/signin",
    "/papers/2999.99999",  # a 404 in the site's layout
]
SIGNED_IN = ["/account", "/library", "/for-you", "/submit", "/admin", "/admin/jobs"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The live URL and a session of an administrator whose display name is long."""
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("header") / "data",
        database_url=None,
        embedding_backend="fake",
        keyword_engine="fts5",
        topics_min_papers=30,
        topics_k=3,
    )
    app = build_app(settings)
    try:
        made = add_papers(app.core.store, 40, embed=False)
        app.core.store.apply_batch(
            Batch(listings=[Listing(DAY, p.id, "hf-daily", upvotes=3) for p in made[:10]])
        )
        app.indexes.indexer.current().run()
        app.catalogue.topics.build()
        admin = add_reader(app, "admin@example.org", "Maximiliana Administratorova-Longname", role="admin")
        session = app.readers.accounts.create_session(admin).session
    finally:
        app.close()
    with live_server(settings) as url:
        yield url, session


def _visit(
    browser: Any, url: str, session: str | None, width: int, paths: list[str]
) -> Iterator[tuple[Any, str]]:
    context = browser.new_context(viewport={"width": width, "height": 900})
    if session is not None:
        context.add_cookies([{"name": SESSION_COOKIE, "value": session, "url": url}])
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    try:
        for path in paths:
            page.goto(url + path)
            yield page, path
    finally:
        context.close()
    assert problems == [], problems


@pytest.mark.parametrize("who", ["anonymous", "signed in"])
def test_the_header_is_one_row_at_1280_px_on_every_page(
    chromium_browser: Any, site: tuple[str, str], who: str, tmp_path: Path
) -> None:
    url, session = site
    paths = PAGES + (SIGNED_IN if who == "signed in" else [])
    for page, path in _visit(chromium_browser, url, session if who == "signed in" else None, 1280, paths):
        if who == "signed in":
            assert page.locator(".user-menu summary").count() == 1, f"{path}: not signed in"
        else:
            assert page.locator(".account-menu .sign-in").count() == 1, f"{path}: no sign-in link"
        header_on_one_row(page, f"{who}, {path}")
        if path == "/":
            page.screenshot(path=str(tmp_path / f"header-1280-{who.replace(' ', '-')}.png"))


def test_at_390_px_the_menu_fits_and_nothing_runs_off_the_screen(
    chromium_browser: Any, site: tuple[str, str], tmp_path: Path
) -> None:
    url, session = site
    for page, path in _visit(chromium_browser, url, session, 390, ["/", "/search", "/map", "/topics"]):
        found = header_row(page)
        assert found["scroll"] <= found["width"], f"{path}: the page scrolls sideways"
        nav = page.evaluate(
            """() => { const n = document.querySelector('.site-nav');
            return [...n.querySelectorAll('li')].filter(li => li.offsetParent !== null)
              .map(li => { const r = li.getBoundingClientRect();
                           return [li.textContent.trim(), r.left, r.right]; }); }"""
        )
        assert nav, f"{path}: no menu"
        assert all(left >= 0 and right <= found["width"] for _, left, right in nav), f"{path}: {nav}"
        assert found["height"] < 150, f"{path}: the header takes {found['height']:.0f} px of a phone's screen"
        page.screenshot(path=str(tmp_path / f"header-390-{path.strip('/') or 'home'}.png"))
