"""A real store filled once per session from ../shared/data/hf_daily.jsonl.gz, served three ways, on
SQLite and again on PostgreSQL (``tests/conftest.py``'s ``BACKENDS``).

``web_settings`` points at that store; ``client`` is the ASGI app under Starlette's TestClient (lifespan
runs, so resources come from the composition root as in production); ``live_url`` is the same app
served by uvicorn on a loopback port for clients that need real HTTP (``huggingface_hub``).
``hf_records`` is the raw JSONL, read independently of our import code, as the oracle.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.bootstrap import App, build_app
from paperfeed.settings import Settings
from paperfeed.web import create_app
from tests.conftest import BACKENDS, session_root
from tests.support import postgres
from tests.support.live_server import live_server


def _import(settings: Settings, hf_path: Path) -> None:
    app = build_app(settings)
    try:
        summary = app.sources.ingest.run(JsonlFileSource(hf_path, batch_size=app.settings.batch_size))
        assert summary.rejected == 0, summary.rejects[:3]
    finally:
        app.close()


@pytest.fixture(scope="session", params=BACKENDS)
def web_settings(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, hf_path: Path
) -> Settings:
    """Settings of a store holding the ~10.6k Hugging Face daily papers, imported by the real code: a
    SQLite data folder, then a PostgreSQL database (built once per run, shared by the xdist workers)."""
    data_dir = tmp_path_factory.mktemp("web-data")
    if request.param == "sqlite":
        settings = Settings(data_dir=data_dir, database_url=None)
        _import(settings, hf_path)
        return settings
    server: postgres.PgServer = request.getfixturevalue("pg_server")
    url = postgres.shared_database(
        server,
        session_root(tmp_path_factory) / "postgres",
        "web_api_hf",
        lambda url: _import(Settings(data_dir=data_dir, database_url=url), hf_path),
    )
    return Settings(data_dir=data_dir, database_url=url)


def pytest_itemcollected(item: pytest.Item) -> None:
    """Generated requests (schemathesis, minutes per run) exercise the web layer: SQLite covers that."""
    if item.path.name == "test_schemathesis.py":
        item.add_marker(pytest.mark.sqlite_only)


@pytest.fixture(scope="session")
def web_app(web_settings: Settings) -> Iterator[App]:
    """An App on the session store for direct service calls (tests compare the API against it)."""
    app = build_app(web_settings)
    yield app
    app.close()


@pytest.fixture(scope="session")
def client(web_settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(lambda: build_app(web_settings)), raise_server_exceptions=True) as c:
        yield c


@pytest.fixture(scope="session")
def live_url(web_settings: Settings) -> Iterator[str]:
    """The app served by a real uvicorn on a loopback port, in a background thread."""
    with live_server(web_settings, start_timeout=20) as url:
        yield url
