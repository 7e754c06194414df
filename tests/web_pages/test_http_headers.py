"""HTTP semantics and hardening headers across the whole app (every GET route, errors, static files).

- ``HEAD`` answers wherever ``GET`` does, with the GET's status and headers and no body;
- ``X-Content-Type-Options: nosniff`` on every response (JSON, feeds, Markdown, errors, static, 404, 405);
- the Content-Security-Policy and Referrer-Policy on error pages too;
- ``Strict-Transport-Security`` only when the request came over https (directly, through the trusted
  proxy's ``X-Forwarded-Proto`` that uvicorn's proxy_headers turns into the scheme, or because
  ``PAPERFEED_BASE_URL`` is https, as Secure cookies decide).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings
from paperfeed.web import create_app
from paperfeed.web.headers import CSP
from tests.support.routes import get_routes

from .conftest import HOSTILE_DAY

HTML = {"accept": "text/html"}
_PARAM = re.compile(r"{([^}:]+)(?::[^}]+)?}")
VALUES = {
    "paper_id": "2405.00001",
    "day": HOSTILE_DAY,
    "week": "2024-W21",
    "month": "2024-05",
    "tag_id": "1",
    "search_id": "1",
    "comment_id": "1",
    "token": "no-such-token",
    "topic_ref": "1",
    "group_id": "1",
    "session_id": "1",
}
# Headers whose value may differ between two requests for the same URL.
VOLATILE = {"date", "server-timing", "set-cookie", "content-length", "x-paperfeed-cache"}  # hit after miss


def _filled(path: str) -> str:
    return _PARAM.sub(lambda m: VALUES[m[1]], path)


def _routes(client: TestClient) -> list[str]:
    return sorted({_filled(r.path) for r in get_routes(client.app)})


def _compare(get: Any, head: Any) -> list[str]:
    problems = []
    if head.status_code != get.status_code:
        problems.append(f"status {head.status_code} (GET: {get.status_code})")
    if head.content:
        problems.append(f"a body of {len(head.content)} bytes")
    for name in set(get.headers) | set(head.headers):
        if name in VOLATILE:
            continue
        if get.headers.get(name) != head.headers.get(name):
            problems.append(f"{name}: {head.headers.get(name)!r} (GET: {get.headers.get(name)!r})")
    return problems


def test_head_answers_like_get_on_every_get_route(client: TestClient) -> None:
    paths = [*_routes(client), "/static/app.css", "/no/such/page"]
    assert len(paths) > 50
    problems = []
    for path in paths:
        for headers in ({}, HTML):
            get = client.get(path, headers=headers)
            head = client.head(path, headers=headers)
            problems += [f"HEAD {path} {headers}: {p}" for p in _compare(get, head)]
    assert not problems, "\n".join(problems)


def _machine_and_page_answers(client: TestClient) -> Iterator[tuple[str, Any]]:
    for path in _routes(client):
        yield f"GET {path}", client.get(path)
        yield f"GET {path} (html)", client.get(path, headers=HTML)
    yield "static", client.get("/static/app.css")
    yield "static 404", client.get("/static/nope.css")
    yield "404 json", client.get("/api/nothing-here")
    yield "404 page", client.get("/no/such/page", headers=HTML)
    yield "405 json", client.post("/api/daily_papers")
    yield "405 page", client.delete("/trending", headers=HTML)
    yield "400 json", client.get("/api/daily_papers?limit=0")
    yield "400 page", client.get("/papers/date/0000-99-99", headers=HTML)
    yield "markdown", client.get("/papers/2405.00001.md")
    yield "openapi", client.get("/openapi.json")


def test_nosniff_on_every_response(client: TestClient) -> None:
    missing = [
        f"{what} → {got.status_code} {got.headers.get('content-type')}"
        for what, got in _machine_and_page_answers(client)
        if got.headers.get("x-content-type-options") != "nosniff"
    ]
    assert not missing, "\n".join(missing)


def test_html_error_pages_carry_the_csp_and_referrer_policy(client: TestClient) -> None:
    answers = [
        client.get("/no/such/page", headers=HTML),
        client.get("/papers/9999.99999", headers=HTML),
        client.delete("/trending", headers=HTML),
        client.get("/search?page=abc", headers=HTML),
        client.get("/library", headers={**HTML, "authorization": "Bearer wrong"}),
    ]
    for got in answers:
        assert got.status_code >= 400, got.status_code
        assert got.headers["content-type"].startswith("text/html"), got.headers["content-type"]
        assert got.headers.get("content-security-policy") == CSP, (got.status_code, got.url)
        assert got.headers.get("referrer-policy") == "same-origin", (got.status_code, got.url)


@pytest.fixture(scope="module")
def https_clients(page_settings: Settings) -> Iterator[dict[str, TestClient]]:
    """The app reached over plain http, over https, and configured with an https base URL."""
    secure = page_settings.model_copy(update={"base_url": "https://papers.example.org"})
    with (
        TestClient(create_app(lambda: build_app(page_settings)), base_url="http://testserver") as plain,
        TestClient(create_app(lambda: build_app(page_settings)), base_url="https://testserver") as tls,
        TestClient(create_app(lambda: build_app(secure)), base_url="http://testserver") as configured,
    ):
        yield {"plain": plain, "tls": tls, "configured": configured}


def test_hsts_only_over_https(https_clients: dict[str, TestClient]) -> None:
    for path in ("/", "/api/daily_papers", "/rss/daily", "/no/such/page", "/static/app.css"):
        assert "strict-transport-security" not in https_clients["plain"].get(path).headers, path
        for name in ("tls", "configured"):
            hsts = https_clients[name].get(path).headers.get("strict-transport-security", "")
            assert re.fullmatch(r"max-age=\d{7,}", hsts), (name, path, hsts)
