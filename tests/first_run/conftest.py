"""A fresh instance on a real SQLite data folder, the real app over it, and who is asking.

``site`` is the app under Starlette's TestClient with lifespan (resources from the composition root as
in production); ``app`` is a second App on the same folder for direct service calls and checks. Papers
are written by the real import code (``rec``/``write_jsonl`` make the files); nothing is mocked.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient

from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.bootstrap import App, build_app
from paperfeed.settings import Settings
from paperfeed.web import create_app
from paperfeed.web.security import CSRF_COOKIE, SESSION_COOKIE

_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
HTML = {"accept": "text/html"}


def rec(pid: str, **kw: Any) -> dict[str, Any]:
    """One paper of our JSONL format."""
    base: dict[str, Any] = {
        "id": pid,
        "title": f"Zebrafish locomotion study {pid}",
        "abstract": "We model zebrafish swimming with sparse transformers.",
        "authors": ["Ada Fishwick"],
        "published": "2025-01-02",
        "categories": ["cs.LG"],
    }
    base.update(kw)
    return base


def jsonl_bytes(records: Sequence[Any], *, gz: bool = False) -> bytes:
    lines = b"".join((r if isinstance(r, bytes) else orjson.dumps(r)) + b"\n" for r in records)
    return gzip.compress(lines) if gz else lines


def import_records(app: App, path: Path, records: Sequence[Any]) -> None:
    path.write_bytes(jsonl_bytes(records))
    summary = app.sources.ingest.run(JsonlFileSource(path, batch_size=app.settings.batch_size))
    assert summary.rejected == 0, summary.rejects


def csrf_from(html: str) -> str:
    found = _CSRF.search(html)
    assert found is not None, "no csrf_token field on the page"
    return found.group(1)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", embedding_backend="fake", upload_max_bytes=64 * 1024)


@pytest.fixture
def app(settings: Settings) -> Iterator[App]:
    container = build_app(settings)
    yield container
    container.close()


@pytest.fixture
def new_client(app: App, settings: Settings) -> Iterator[Callable[[], TestClient]]:
    """Browsers on the site, each with its own cookie jar."""
    clients: list[TestClient] = []

    def make() -> TestClient:
        client = TestClient(create_app(lambda: build_app(settings)), follow_redirects=False)
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def site(new_client: Callable[[], TestClient]) -> TestClient:
    return new_client()


def sign_in_as(client: TestClient, app: App, email: str, *, role: str = "user") -> None:
    """A confirmed account (no password, no mail) and its session in ``client``'s cookie jar."""
    accounts = app.readers.accounts
    if accounts.store.user_by_email(email) is None:
        accounts.sign_up(email, None, None, client="first-run-tests", base_url="http://testserver")
    user = accounts.user_by_email(email)
    accounts.store.mark_verified(user.id, accounts.clock())
    if role != "user":
        accounts.set_role(email, role)
    client.get("/signin", headers=HTML)  # the CSRF cookie
    domain = next(c.domain for c in client.cookies.jar if c.name == CSRF_COOKIE)
    session = accounts.create_session(accounts.user_by_email(email)).session
    client.cookies.set(SESSION_COOKIE, session, domain=domain)


@pytest.fixture
def admin(site: TestClient, app: App) -> TestClient:
    """``site`` signed in as an administrator."""
    sign_in_as(site, app, "admin@example.org", role="admin")
    return site
