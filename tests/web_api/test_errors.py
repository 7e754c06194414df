"""Every error has one shape and a useful message; hostile input never produces a 500."""

from __future__ import annotations

import logging
from urllib.parse import quote

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from paperfeed.web import errors

pytestmark = pytest.mark.shared


def _assert_error(response_json: object, status: int) -> str:
    assert isinstance(response_json, dict)
    assert set(response_json) >= {"error", "status", "title"}
    assert response_json["status"] == status
    message = response_json["error"]
    assert isinstance(message, str)
    assert message
    return message


@pytest.mark.parametrize(
    ("url", "status", "needle"),
    [
        ("/api/daily_papers?date=2025-02-30", 400, "not a calendar date"),
        ("/api/daily_papers?date=yesterday", 400, "YYYY-MM-DD"),
        ("/api/daily_papers?week=2025-W60", 400, "no ISO week 60"),
        ("/api/daily_papers?week=2025-12", 400, "YYYY-Www"),
        ("/api/daily_papers?month=2025-13", 400, "month 13"),
        ("/api/daily_papers?date=2025-03-14&month=2025-03", 400, "only one of"),
        ("/api/daily_papers?p=-1", 400, "p: "),
        ("/api/daily_papers?p=abc", 400, "p: "),
        ("/api/daily_papers?p=99999999999999999999999", 400, "p: "),
        ("/api/daily_papers?limit=0", 400, "limit: "),
        ("/api/daily_papers?limit=101", 400, "less than or equal to 100"),
        ("/api/daily_papers?sort=random", 400, "sort: "),
        ("/api/papers/search?q=" + "a" * 251, 400, "limit is 250"),
        ("/api/papers/search?q=x&limit=121", 400, "less than or equal to 120"),
        ("/api/papers?limit=1000", 400, "limit: "),
        ("/api/papers?cursor=not-a-cursor", 400, "cursor"),
        ("/api/papers?cursor=" + "A" * 500, 400, "cursor"),
        ("/api/papers/2503.99999", 404, "2503.99999 is not in this paperfeed instance"),
        ("/api/papers/hep-th/9901001", 404, "hep-th/9901001 is not in"),
        ("/api/papers/not-an-id", 400, "not an arXiv id"),
        ("/api/papers/2513.00001", 400, "month 13"),
        ("/api/papers/" + "9" * 5000, 400, "not an arXiv id"),
        ("/api/papers/2503.10613/similar?limit=0", 400, "limit: "),
        ("/api/papers/not-an-id/similar", 400, "not an arXiv id"),
        ("/papers/2503.99999.md", 404, "not in this paperfeed instance"),
        ("/papers/..%2F..%2Fetc%2Fpasswd.md", 400, "not an arXiv id"),
        ("/rss/daily?date=2025-99-01", 400, "not a calendar date"),
        ("/atom/search?q=" + "b" * 300, 400, "limit is 250"),
        ("/api/nothing-here", 404, "no such page or endpoint"),
    ],
)
def test_bad_requests_get_a_clear_4xx(client: TestClient, url: str, status: int, needle: str) -> None:
    response = client.get(url)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert needle in _assert_error(response.json(), status)


def test_wrong_method_is_405_in_the_same_shape(client: TestClient) -> None:
    response = client.post("/api/daily_papers")
    assert response.status_code == 405
    assert "POST" in _assert_error(response.json(), 405)


HOSTILE = [
    "\x00",
    "%00",
    "' OR 1=1 --",
    "<script>alert(1)</script>",
    "😀" * 40,
    "\ufffd\ufeff",
    "../../../../etc/passwd",
    "-1",
    "1e309",
    "2025-W",
    "9" * 400,
    "\u202e2025-03-14",
    "2025-03-14\n",
    "NaN",
]


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_values_in_every_parameter_never_500(client: TestClient, value: str) -> None:
    urls = [
        ("/api/daily_papers", {"date": value}),
        ("/api/daily_papers", {"week": value}),
        ("/api/daily_papers", {"month": value}),
        ("/api/daily_papers", {"p": value}),
        ("/api/daily_papers", {"limit": value}),
        ("/api/daily_papers", {"sort": value}),
        ("/api/daily_papers", {"submitter": value}),
        ("/api/papers", {"cursor": value}),
        ("/api/papers", {"limit": value}),
        ("/rss/daily", {"date": value}),
        ("/atom/daily", {"date": value}),
    ]
    for path, params in urls:
        response = client.get(path, params=params)
        assert response.status_code < 500, (path, params, response.text)
        if response.status_code >= 400:
            _assert_error(response.json(), response.status_code)
    segment = quote(value, safe="")
    for path in (f"/api/papers/{segment}", f"/papers/{segment}.md", f"/api/papers/{segment}/similar"):
        response = client.get(path)
        assert response.status_code < 500, (path, response.text)


@pytest.mark.parametrize(
    "url",
    [
        "/api/daily_papers?date=%FF%FE",
        "/api/daily_papers?week=%ED%A0%80",
        "/api/papers?cursor=%C0%AF",
        "/api/papers/%FF",
        "/papers/%ED%A0%80.md",
        "/rss/search?q=%FF",
        "/api/papers/search?q=%00%FF",
    ],
)
def test_invalid_utf8_never_500(client: TestClient, url: str) -> None:
    response = client.get(url)
    assert response.status_code < 500, response.text


def test_browsers_get_html_errors_outside_the_api(client: TestClient) -> None:
    response = client.get("/no/such/page", headers={"Accept": "text/html"})
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/html")
    assert "no such page or endpoint" in response.text
    api = client.get("/api/no-such", headers={"Accept": "text/html"})
    assert api.headers["content-type"].startswith("application/json")


def test_unexpected_errors_are_logged_and_answered_in_the_shape(caplog: pytest.LogCaptureFixture) -> None:
    app = FastAPI()
    errors.install(app)

    @app.get("/api/boom")
    def boom() -> None:
        raise RuntimeError("secret internals")

    with TestClient(app, raise_server_exceptions=False) as c, caplog.at_level(logging.ERROR, "paperfeed.web"):
        response = c.get("/api/boom")
    assert response.status_code == 500
    message = _assert_error(response.json(), 500)
    assert "secret" not in message
    assert "unhandled error on GET /api/boom" in caplog.text
    assert "secret internals" in caplog.text  # the traceback is in the log, not in the answer
