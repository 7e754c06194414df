"""The real app on a fresh real SQLite store with a few synthetic papers (``data/papers.jsonl``, imported by
the real import code), readers made through the accounts service, and the arXiv API on a loopback server
replaying recorded answers (``../shared/fixtures``).

``site`` is the app under Starlette's TestClient (lifespan runs: resources come from the composition root
as in production); ``app`` is a second App on the same data folder for direct service calls and checks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import insert

from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.adapters.store.schema_accounts import users
from paperfeed.bootstrap import App, build_app
from paperfeed.domain.accounts import User
from paperfeed.settings import Settings
from paperfeed.web import create_app
from paperfeed.web.security import SESSION_COOKIE
from tests.support.http_server import ReplayServer, Reply

DATA = Path(__file__).resolve().parent / "data"
PAPERS = DATA / "papers.jsonl"
API_PATH = "/api/query"
RECORDED = "arxiv_atom_api/new_format_2026_lukasschwab_arxiv.py_recorded_json"
DAY = "2025-01-06"  # the day data/papers.jsonl lists 2501.00201-3 on (2501.00204 is on the 7th)
_CSRF_META = re.compile(r'<meta name="csrf-token" content="([^"]+)">')


def make_settings(data_dir: Path, api_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "database_url": None,
        "embedding_backend": "fake",
        "keyword_engine": "fts5",
        "arxiv_api_url": api_url,
        "arxiv_delay": 0,
        "http_retries": 0,
        "http_timeout": 2,
        "submissions_per_day": 3,
        "comments_per_hour": 5,
        **overrides,
    }
    return Settings(**values)


def load_papers(app: App) -> None:
    summary = app.sources.ingest.run(JsonlFileSource(PAPERS, batch_size=app.settings.batch_size))
    assert summary.rejected == 0, summary.rejects


@pytest.fixture
def settings(tmp_path: Path, server: ReplayServer) -> Settings:
    return make_settings(tmp_path / "data", server.base_url + API_PATH)


@pytest.fixture
def app(settings: Settings) -> Iterator[App]:
    container = build_app(settings)
    load_papers(container)
    yield container
    container.close()


@pytest.fixture
def site(app: App, settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(lambda: build_app(settings)), follow_redirects=False) as client:
        yield client


def add_reader(
    app: App, email: str, name: str | None = None, *, role: str = "user", hidden: bool = False
) -> User:
    """A verified reader (made directly in the store: sign-up itself is the accounts' tests' business)."""
    now = datetime.now(UTC)
    with app.core.store.engine.begin() as conn:
        key = conn.execute(
            insert(users).values(
                email=email,
                display_name=name,
                role=role,
                email_verified_at=now,
                created_at=now,
                hidden_at=now if hidden else None,
            )
        ).inserted_primary_key
    assert key is not None
    return User(int(key[0]), email, name, role, True)


def sign_in(client: TestClient, app: App, user: User) -> str:
    """Give ``client`` a session of ``user``; returns the CSRF token its pages carry."""
    client.cookies.clear()
    client.cookies.set(SESSION_COOKIE, app.readers.accounts.create_session(user).session)
    page = client.get("/submit", headers={"accept": "text/html"})
    assert page.status_code == 200, page.text
    found = _CSRF_META.search(page.text)
    assert found is not None
    return found.group(1)


def bearer(app: App, user: User) -> dict[str, str]:
    return {"authorization": f"Bearer {app.readers.accounts.create_api_token(user, 'tests')[1]}"}


@pytest.fixture
def recorded_dir(shared_dir: Path) -> Path:
    return shared_dir / "fixtures" / RECORDED


def serve_recorded(server: ReplayServer, recorded_dir: Path, name: str, id_list: str) -> None:
    """Answer requests for ``id_list`` with the body arXiv sent for the recorded request ``name``."""
    raw = orjson.loads((recorded_dir / name).read_bytes())
    reply = Reply(raw["status_code"], raw["body"].encode(), {"Content-Type": "application/atom+xml"})
    server.add(API_PATH, reply, params={"id_list": id_list})


@pytest.fixture
def arxiv(server: ReplayServer, recorded_dir: Path) -> ReplayServer:
    """The arXiv API with recorded answers for a new-style, a versioned, an old-style and an unknown id."""
    serve_recorded(server, recorded_dir, "id_1605.08386_s0_m100_199195aa31ad.json", "1605.08386")
    serve_recorded(server, recorded_dir, "id_2104.12255v1_s0_m100_6ae69987ffe1.json", "2104.12255")
    serve_recorded(server, recorded_dir, "id_astro-ph_0601001_s0_m100_3150dca9dc76.json", "astro-ph/0601001")
    serve_recorded(
        server, recorded_dir, "id_quant-ph_0201082v1_s0_m100_86989fe779ef.json", "quant-ph/0201082"
    )
    serve_recorded(server, recorded_dir, "id_0000.0000_s0_m100_8b51d9633a68.json", "2501.99999")
    return server
