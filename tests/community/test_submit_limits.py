"""Security issue #12, finding 3: failed submissions did not count against the daily cap, and each held a
request 15-28 s while arXiv was unreachable (the harvest client's retries and 30 s timeouts).

Now every attempt that would ask arXiv counts against the cap (failed ones too), and a submission asks
arXiv once, with the short ``PAPERFEED_SUBMIT_TIMEOUT``: unreachable is a quick 502, silent a 504 within
that timeout. The settings here are the production defaults for retries, timeouts and arXiv's 3 s pacing.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.community import ArxivUnreachable, LimitReached
from paperfeed.settings import Settings
from paperfeed.web import create_app
from tests.support.bounded import run_bounded
from tests.support.http_server import ReplayServer, Reply

from .conftest import API_PATH, add_reader, bearer, load_papers, make_settings, sign_in

NOW = datetime(2026, 3, 2, 15, 30, tzinfo=UTC)
HTML = {"accept": "text/html"}
DEFAULTS = {"http_retries": 4, "http_timeout": 30.0, "arxiv_delay": 3.0}  # Settings' own defaults


def test_failed_attempts_count_against_the_daily_cap(app: App, server: ReplayServer) -> None:
    server.add(API_PATH, Reply(503, b"down for maintenance", {"Retry-After": "0"}))
    app.readers.community.clock = lambda: NOW
    ada = add_reader(app, "ada@example.org")
    for n in range(3):  # the cap in these tests
        with pytest.raises(ArxivUnreachable):
            app.readers.community.submit(ada, f"2502.0000{n + 1}")
    asked = len(server.requests)
    with pytest.raises(LimitReached, match="attempts that failed count too") as refused:
        app.readers.community.submit(ada, "2502.00004")
    assert refused.value.retry_after == 8 * 3600 + 30 * 60  # until midnight UTC
    assert len(server.requests) == asked  # refused before asking arXiv
    assert app.readers.community.submitted_today(ada) == 3
    # papers already here are still answered (they use nothing), and the next day starts afresh
    assert not app.readers.community.submit(ada, "2501.00202").created
    app.readers.community.clock = lambda: NOW.replace(day=3)
    with pytest.raises(ArxivUnreachable):
        app.readers.community.submit(ada, "2502.00004")


def test_the_page_counts_failed_attempts(app: App, site: TestClient, server: ReplayServer) -> None:
    server.add(API_PATH, Reply(503, b"down", {"Retry-After": "0"}))
    ada = add_reader(app, "ada@example.org")
    token = sign_in(site, app, ada)
    failed = site.post("/submit", data={"csrf_token": token, "paper": "2502.00001"}, headers=HTML)
    assert failed.status_code == 502
    assert "arXiv could not be reached" in failed.text
    assert "You can submit 2 more papers today" in failed.text
    auth = bearer(app, ada)
    site.cookies.clear()  # the API with a token only
    for paper in ("2502.00002", "2502.00003"):
        assert site.post("/api/papers/submit", json={"id": paper}, headers=auth).status_code == 502
    capped = site.post("/api/papers/submit", json={"id": "2502.00004"}, headers=auth)
    assert capped.status_code == 429
    assert int(capped.headers["retry-after"]) > 0


# -- how long a submission may wait for arXiv -------------------------------------------------------------


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections (the kernel's backlog) and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    try:
        yield int(sock.getsockname()[1])
    finally:
        sock.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _site(tmp_path: Path, api_url: str, **overrides: Any) -> tuple[Settings, App]:
    settings = make_settings(tmp_path / "data", api_url, **{**DEFAULTS, **overrides})
    app = build_app(settings)
    load_papers(app)
    return settings, app


def test_a_silent_arxiv_is_a_quick_504(tmp_path: Path, silent_port: int) -> None:
    settings, app = _site(tmp_path, f"http://127.0.0.1:{silent_port}/api/query")
    try:
        auth = bearer(app, add_reader(app, "ada@example.org"))
        with TestClient(create_app(lambda: build_app(settings))) as site:
            reply, _ = run_bounded(
                lambda: site.post("/api/papers/submit", json={"id": "2502.00001"}, headers=auth), 20
            )  # the 5 s submission timeout; the general 30 s one (the setting ignored) would pass the bound
        assert reply.status_code == 504, reply.text
        assert "arXiv did not answer within" in reply.json()["error"]
        assert "Nothing was submitted" in reply.json()["error"]
    finally:
        app.close()


def test_the_wait_is_bounded_by_the_configured_timeout(tmp_path: Path, silent_port: int) -> None:
    _, app = _site(tmp_path, f"http://127.0.0.1:{silent_port}/api/query", submit_timeout=1.0)
    try:
        ada = add_reader(app, "ada@example.org")
        with pytest.raises(ArxivUnreachable) as failed:
            run_bounded(lambda: app.readers.community.submit(ada, "2502.00001"), 10)
        assert failed.value.status == 504
        assert "within 1 second" in str(failed.value)
        # The second waits out arXiv's 3 s pacing and then the 1 s timeout; the general 30 s timeout (the
        # setting ignored) would pass 16 s, the bound.
        with pytest.raises(ArxivUnreachable) as again:
            run_bounded(lambda: app.readers.community.submit(ada, "2502.00002"), 16)
        assert "within 1 second" in str(again.value)
    finally:
        app.close()


def test_an_unreachable_arxiv_is_a_quick_502(tmp_path: Path) -> None:
    settings, app = _site(tmp_path, f"http://127.0.0.1:{_closed_port()}/api/query")
    try:
        auth = bearer(app, add_reader(app, "ada@example.org"))
        with TestClient(create_app(lambda: build_app(settings))) as site:
            reply, _ = run_bounded(
                lambda: site.post("/api/papers/submit", json={"id": "2502.00001"}, headers=auth), 10
            )
        assert reply.status_code == 502, reply.text
        assert "arXiv could not be reached" in reply.json()["error"]
    finally:
        app.close()
