"""Answers that depend on who asks are never kept by shared caches or the browser's disk.

A signed-in reader's paper page shows their private note; ``/api/me/…`` answers their library. Any
answer to a request carrying a session cookie or an ``Authorization`` header gets ``Cache-Control:
private, no-store`` (unless its handler chose a policy), and every answer not marked public varies on
``Cookie`` and ``Authorization``, so an anonymous copy is never served to a signed-in reader or back.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App, build_app
from paperfeed.web import create_app
from paperfeed.web.headers import SESSION_COOKIE_PREFIX
from paperfeed.web.security import SESSION_COOKIE

HTML = {"accept": "text/html"}


@pytest.fixture
def site(app: App) -> Iterator[TestClient]:
    with TestClient(create_app(lambda: build_app(app.settings)), follow_redirects=False) as client:
        yield client


def _vary(answer: object) -> set[str]:
    value = answer.headers.get("vary", "")  # type: ignore[attr-defined]
    return {v.strip().lower() for v in value.split(",") if v.strip()}


def test_a_readers_private_answers_are_private_and_not_stored(app: App, site: TestClient, ada: int) -> None:
    app.readers.library.set_note(ada, "2401.00001", "My secret reading note")
    user = app.readers.accounts.user_by_id(ada)
    assert user is not None
    token = app.readers.accounts.create_api_token(user, "tests")[1]
    site.cookies.set(SESSION_COOKIE, app.readers.accounts.create_session(user).session)
    page = site.get("/papers/2401.00001", headers=HTML)
    assert "My secret reading note" in page.text
    assert page.headers.get("cache-control") == "private, no-store"
    assert "cookie" in _vary(page)
    for path in ("/library", "/api/me/library", "/api/me/papers/2401.00001", "/", "/search?q=alpha"):
        got = site.get(path, headers=HTML)
        assert got.status_code == 200, (path, got.status_code)
        assert "no-store" in got.headers.get("cache-control", ""), path  # some handlers say no-store
        assert {"cookie", "authorization"} <= _vary(got), path
    site.cookies.clear()
    api = site.get("/api/me/papers/2401.00001", headers={"authorization": f"Bearer {token}"})
    assert api.json()["note"]["body"] == "My secret reading note"
    assert api.headers.get("cache-control") == "private, no-store"
    assert "authorization" in _vary(api)


def test_the_middleware_knows_the_session_cookie_by_its_name() -> None:
    assert f"{SESSION_COOKIE}=".encode() == SESSION_COOKIE_PREFIX


def test_anonymous_and_public_answers_keep_their_caching(site: TestClient) -> None:
    anonymous = site.get("/papers/2401.00001", headers=HTML)
    assert "no-store" not in anonymous.headers.get("cache-control", "")
    assert "cookie" in _vary(anonymous)  # a cache must not give this copy to a signed-in reader
    feed = site.get("/rss/daily", headers={"cookie": f"{SESSION_COOKIE}=whatever"})
    assert feed.headers["cache-control"].startswith("public, max-age=300")  # the same for everyone
    anonymous_feed = site.get("/rss/daily")
    assert (anonymous_feed.headers["cache-control"], anonymous_feed.content) == (
        feed.headers["cache-control"],
        feed.content,
    )
