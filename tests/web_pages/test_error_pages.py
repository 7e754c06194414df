"""Every error a browser can meet is a page in the site's layout (#40 item 5), JSON for everyone else.

Before, the generic replies of ``errors.error_response`` (an unknown address, a wrong method, bad
parameters, a body too large, a server error, the database away) were a bare HTML fragment without the
site's header, stylesheet or viewport, so a phone drew them 980 px wide. Now each is the site's error page
(header, search box, footer); a server error's page is drawn for no one signed in (its header asks the
store nothing), and should the layout itself fail, a plain page that still has the viewport is sent.
Tests/page_walk/test_every_page.py looks at the same pages in chromium at 390 and 1280 px.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import lxml.html
import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings
from paperfeed.web import create_app
from paperfeed.web.body_limits import DEFAULT_MAX_BYTES
from paperfeed.web.security import SESSION_COOKIE
from tests.community.conftest import add_reader
from tests.support.failing_routes import SECRET, add_failing_routes

HTML = {"accept": "text/html,application/xhtml+xml"}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, str]]:
    settings = Settings(data_dir=tmp_path_factory.mktemp("errors") / "data", embedding_backend="fake")
    app = build_app(settings)
    try:
        reader = add_reader(app, "reader@example.org", "Rita Reader")
        session = app.readers.accounts.create_session(reader).session
    finally:
        app.close()
    web = create_app(lambda: build_app(settings))
    add_failing_routes(web)
    with TestClient(web, raise_server_exceptions=False, follow_redirects=False) as client:
        yield client, session


ERRORS = [  # (method, path, body, status, what the page says)
    ("GET", "/no-such-page", None, 404, "Page not found"),
    ("GET", "/papers/2401.99999", None, 404, "Paper not found"),
    ("POST", "/trending", None, 405, "Method not allowed"),
    ("GET", "/?page=abc", None, 400, "Bad request"),
    ("GET", "/papers/date/0001-01-01", None, 400, "Date out of range"),
    ("POST", "/signin", b"x" * (DEFAULT_MAX_BYTES + 1), 413, "Too large"),
    ("POST", "/signout", b"", 403, "Request refused"),  # no CSRF token
    ("GET", "/test-only/boom", None, 500, "Something went wrong"),
    ("GET", "/test-only/database-away", None, 503, "Temporarily unavailable"),
]


PAGE_HANDLERS = {
    "/papers/2401.99999",
    "/papers/date/0001-01-01",
}  # pages answering HTML alone (JSON: the API)


def _text(element: object) -> str:
    """An element's text (lxml's stubs give cssselect() results the base element type)."""
    assert isinstance(element, lxml.html.HtmlElement)
    return str(element.text_content())


def _layout(body: str) -> lxml.html.HtmlElement:
    doc = lxml.html.fromstring(body)
    assert doc.cssselect('meta[name="viewport"]'), "no viewport: a phone draws the page 980 px wide"
    assert doc.cssselect('link[rel="stylesheet"][href^="/static/style.css"]'), "not the site's stylesheet"
    assert doc.cssselect("header.site-header .brand"), "not the site's header"
    assert doc.cssselect("footer.site-footer"), "not the site's footer"
    assert doc.cssselect("form.big-search input[name=q]"), "no search box to go on from"
    return doc


@pytest.mark.parametrize(("method", "path", "body", "status", "heading"), ERRORS, ids=[e[1] for e in ERRORS])
def test_every_error_is_a_page_in_the_sites_layout(
    site: tuple[TestClient, str], method: str, path: str, body: bytes | None, status: int, heading: str
) -> None:
    client, _ = site
    got = client.request(method, path, content=body, headers=HTML)
    assert got.status_code == status, got.text[:300]
    assert got.headers["content-type"].startswith("text/html")
    assert got.headers["content-security-policy"].startswith("default-src 'self'")
    doc = _layout(got.text)
    assert _text(doc.cssselect("h1")[0]).strip() == heading
    assert _text(doc.cssselect(".status-code")[0]).strip() == str(status)
    assert "Traceback" not in got.text
    assert SECRET not in got.text
    assert "connection refused" not in got.text


@pytest.mark.parametrize(("method", "path", "body", "status", "heading"), ERRORS, ids=[e[1] for e in ERRORS])
def test_machines_still_get_the_json_shape(
    site: tuple[TestClient, str], method: str, path: str, body: bytes | None, status: int, heading: str
) -> None:
    client, _ = site
    got = client.request(method, path, content=body, headers={"accept": "application/json"})
    assert got.status_code == status
    if path in PAGE_HANDLERS:
        return
    assert got.headers["content-type"].startswith("application/json"), got.text[:200]
    assert got.json()["status"] == status


def test_a_signed_in_reader_sees_their_menu_on_a_404_but_a_server_error_asks_the_store_nothing(
    site: tuple[TestClient, str],
) -> None:
    client, session = site
    client.cookies.set(SESSION_COOKIE, session)
    try:
        missing = lxml.html.fromstring(client.get("/no-such-page", headers=HTML).text)
        assert _text(missing.cssselect(".user-menu summary bdi")[0]) == "Rita Reader"
        failed = _layout(client.get("/test-only/database-away", headers=HTML).text)
        assert not failed.cssselect(".user-menu")
        assert failed.cssselect(".account-menu .sign-in")
    finally:
        client.cookies.clear()


def test_a_layout_that_cannot_render_falls_back_to_a_plain_page_with_the_viewport(
    site: tuple[TestClient, str], tmp_path: Path
) -> None:
    """The renderer failing (here: its template folder gone) is no reason for a bare page or a 500."""
    client, _ = site
    renderer = client.app.state.renderer  # type: ignore[attr-defined]
    loader = renderer.env.loader
    renderer.env.loader = type(loader)(str(tmp_path))  # an empty folder: no template found
    renderer.env.cache.clear()
    try:
        got = client.get("/no-such-page", headers=HTML)
    finally:
        renderer.env.loader = loader
        renderer.env.cache.clear()
    assert got.status_code == 404
    doc = lxml.html.fromstring(got.text)
    assert doc.cssselect('meta[name="viewport"]')
    assert doc.cssselect('link[rel="stylesheet"][href="/static/style.css"]')
    assert _text(doc.cssselect("h1")[0]) == "Page not found"
