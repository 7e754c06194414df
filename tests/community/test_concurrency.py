"""Many clients at once against the real server: ``paperfeed serve --workers 2`` (two uvicorn worker
processes writing the same SQLite file) hit by dozens of threads. Counts and caps must come out exact.

The store-level races on both backends are in test_store.py; this is the end-to-end check through HTTP,
sessions, tokens and separate processes.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from paperfeed.adapters.store.schema_community import paper_comments, paper_submissions, paper_upvotes
from paperfeed.bootstrap import App, build_app
from paperfeed.domain.accounts import User
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper

from .conftest import add_reader, load_papers, make_settings

pytestmark = pytest.mark.slow  # starts a two-process server: ~10 s on a busy 2-core machine

PAPER = "2501.00202"  # 11 upvotes imported from Hugging Face
UNLISTED = [f"2502.{n:05d}" for n in range(1, 9)]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, App]]:
    data_dir = tmp_path_factory.mktemp("concurrency") / "data"
    settings = make_settings(data_dir, "http://127.0.0.1:9/api/query")
    app = build_app(settings)
    load_papers(app)
    when = datetime(2025, 1, 5, tzinfo=UTC)
    app.core.store.apply_batch(
        Batch(papers=[Paper(id=p, title=f"Unlisted {p}", published=when) for p in UNLISTED])
    )
    port = _free_port()
    env = {
        **_serve_env(data_dir, port),
        "PAPERFEED_SUBMISSIONS_PER_DAY": "3",
        "PAPERFEED_COMMENTS_PER_HOUR": "5",
        # counts must be exact at once: the readiness probe below caches the paper's anonymous answer,
        # which the default grace (docs/deployment.md, "Caching") may serve for 10 s after the votes
        "PAPERFEED_PAGE_CACHE_GRACE_SECONDS": "0",
        "PAPERFEED_PAGE_CACHE_IMPORT_GRACE_SECONDS": "0",
    }
    try:
        with _serving(env, port) as url:
            yield url, app
    finally:
        app.close()


def _serve_env(data_dir: Path, port: int) -> dict[str, str]:
    """The environment of a ``paperfeed serve`` on ``data_dir`` at ``port`` (fake embedder, FTS5)."""
    return {
        **os.environ,
        "PAPERFEED_DATA_DIR": str(data_dir),
        "PAPERFEED_SECRET_KEY": "serve-test-secret-" + "x" * 40,
        "PAPERFEED_BASE_URL": f"http://127.0.0.1:{port}",
        "PAPERFEED_EMBEDDING_BACKEND": "fake",
        "PAPERFEED_KEYWORD_ENGINE": "fts5",
    }


@contextlib.contextmanager
def _serving(env: dict[str, str], port: int) -> Iterator[str]:
    """``paperfeed serve --workers 2`` on ``port`` until the block ends; its URL once it answers."""
    command = [sys.executable, "-m", "paperfeed", "serve", "--workers", "2", "--port", str(port)]
    server = subprocess.Popen(
        [*command, "--log-level", "warning"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/api/papers/{PAPER}", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                output = server.stdout.read().decode() if server.stdout else ""
                pytest.fail(f"paperfeed serve did not start: {output[-2000:]}")
            time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _burst(requests: list[Callable[[httpx.Client], httpx.Response]]) -> list[httpx.Response]:
    """Send every request from its own thread, all released at the same moment."""
    barrier = threading.Barrier(len(requests))

    def run(request: Callable[[httpx.Client], httpx.Response]) -> httpx.Response:
        with httpx.Client(timeout=60) as client:
            barrier.wait(timeout=60)
            return request(client)

    with ThreadPoolExecutor(len(requests)) as pool:
        return list(pool.map(run, requests))


def _count(app: App, table: Any, *where: Any) -> int:
    with app.core.store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table).where(*where)).scalar_one())


def _token(app: App, user: User) -> dict[str, str]:
    return {"authorization": f"Bearer {app.readers.accounts.create_api_token(user, 'burst')[1]}"}


def test_concurrent_upvotes_through_two_server_processes_are_counted_exactly(served: tuple[str, App]) -> None:
    url, app = served
    readers = [add_reader(app, f"voter{n}@example.org") for n in range(20)]
    tokens = [_token(app, r) for r in readers]
    target = f"{url}/api/papers/{PAPER}/upvote"

    def vote(headers: dict[str, str]) -> Callable[[httpx.Client], httpx.Response]:
        return lambda client: client.post(target, headers=headers)

    def unvote(headers: dict[str, str]) -> Callable[[httpx.Client], httpx.Response]:
        return lambda client: client.delete(target, headers=headers)

    # every reader clicks three times at once: 60 requests, 20 votes
    answers = _burst([vote(t) for t in tokens for _ in range(3)])
    assert {a.status_code for a in answers} == {200}, [a.text for a in answers if a.status_code != 200][:3]
    assert _count(app, paper_upvotes, paper_upvotes.c.paper_id == PAPER) == 20
    assert httpx.get(f"{url}/api/papers/{PAPER}").json()["upvotes"] == 11 + 20
    # half take it back (twice each) while the other half vote again: 10 votes remain
    answers = _burst([unvote(t) for t in tokens[::2] for _ in range(2)] + [vote(t) for t in tokens[1::2]])
    assert {a.status_code for a in answers} == {200}
    assert _count(app, paper_upvotes, paper_upvotes.c.paper_id == PAPER) == 10
    shown = httpx.get(f"{url}/api/papers/{PAPER}/upvoters").json()
    assert shown["total"] == 10
    day = httpx.get(f"{url}/api/daily_papers", params={"date": "2025-01-06"}).json()
    assert day[0]["paper"]["id"] == PAPER  # 21 now ranks above the 12 of 2501.00201
    assert day[0]["paper"]["upvotes"] == 21


def test_concurrent_submissions_and_comments_respect_the_caps(served: tuple[str, App]) -> None:
    url, app = served
    ada = add_reader(app, "ada@example.org")
    auth = _token(app, ada)

    def submit(paper: str, headers: dict[str, str] = auth) -> Callable[[httpx.Client], httpx.Response]:
        return lambda client: client.post(f"{url}/api/papers/submit", json={"id": paper}, headers=headers)

    def comment(n: int) -> Callable[[httpx.Client], httpx.Response]:
        return lambda client: client.post(
            f"{url}/api/papers/{PAPER}/comments", json={"body": f"n{n}"}, headers=auth
        )

    answers = _burst([submit(p) for p in UNLISTED] + [comment(n) for n in range(12)])
    submits, comments = answers[: len(UNLISTED)], answers[len(UNLISTED) :]
    assert sorted(a.status_code for a in submits) == [201] * 3 + [429] * (len(UNLISTED) - 3)
    assert sorted(a.status_code for a in comments) == [201] * 5 + [429] * 7
    assert _count(app, paper_submissions, paper_submissions.c.user_id == ada.id) == 3
    assert _count(app, paper_comments, paper_comments.c.user_id == ada.id) == 5
    # the same paper submitted by many readers at once is submitted once
    racers = [_token(app, add_reader(app, f"racer{n}@example.org")) for n in range(10)]
    paper = next(p for p in UNLISTED if app.readers.community.submission(p) is None)
    answers = _burst([submit(paper, headers) for headers in racers])
    assert sorted(a.status_code for a in answers) == [200] * 9 + [201]
    assert _count(app, paper_submissions, paper_submissions.c.paper_id == paper) == 1


def test_the_two_workers_share_one_page_cache(served: tuple[str, App]) -> None:
    url, _app = served
    hows = []
    for _ in range(12):  # a new connection each time: the kernel hands them to either worker
        with httpx.Client(timeout=30) as client:
            answer = client.get(f"{url}/papers/{UNLISTED[0]}", headers={"accept": "text/html"})
            assert answer.status_code == 200
            hows.append(answer.headers.get("x-paperfeed-cache"))
    assert hows[0] == "miss"
    assert hows.count("miss") == 1, f"the page was rendered by more than one worker: {hows}"
    assert set(hows) <= {"miss", "hit", "shared"}, hows


def test_a_restarted_server_finds_the_pages_its_workers_rendered(tmp_path: Path) -> None:
    """The shared page cache outlives ``serve``: the same code and settings start warm (its keys carry
    their fingerprint, so other code or settings never find the old copies)."""
    data_dir = tmp_path / "data"
    app = build_app(make_settings(data_dir, "http://127.0.0.1:9/api/query"))
    load_papers(app)
    app.close()
    port = _free_port()
    env = _serve_env(data_dir, port)
    page = f"/papers/{PAPER}"
    with _serving(env, port) as url:
        first = httpx.get(url + page, headers={"accept": "text/html"}, timeout=30)
        assert (first.status_code, first.headers.get("x-paperfeed-cache")) == (200, "miss")
    with _serving(env, port) as url:
        again = httpx.get(url + page, headers={"accept": "text/html"}, timeout=30)
        assert again.status_code == 200
        assert again.headers.get("x-paperfeed-cache") == "shared", "the restart rendered the page again"
        assert again.headers["etag"] == first.headers["etag"]
    with _serving({**env, "PAPERFEED_BASE_URL": f"http://localhost:{port}"}, port) as url:
        other = httpx.get(url + page, headers={"accept": "text/html"}, timeout=30)
        assert other.headers.get("x-paperfeed-cache") == "miss", "a copy rendered under other settings"
