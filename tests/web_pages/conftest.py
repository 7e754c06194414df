"""A real SQLite store, filled once per session, behind the real app: through TestClient and a live server.

The store holds ../shared/data/hf_daily.jsonl.gz plus ``data/hostile.jsonl`` (synthetic papers with
markup, entities, stray ``$``, RTL text and ``javascript:`` links), both imported by the real import
code. ``hf_records`` reads the raw file independently of that code: it is the oracle for rankings.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient

from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings
from paperfeed.web import create_app
from tests.support.browser import CHROMIUM_ARGS, chromium_path  # noqa: F401  (re-exported)
from tests.support.live_server import live_server

HERE = Path(__file__).resolve().parent
HOSTILE = HERE / "data" / "hostile.jsonl"
ARTIFACTS = HERE.parent.parent / "test-artifacts" / "web_pages"
HOSTILE_DAY = "2024-05-20"  # the day data/hostile.jsonl lists its papers on (before any real listing)


@pytest.fixture(scope="session")
def hostile_records() -> dict[str, dict[str, Any]]:
    return {rec["id"]: rec for rec in map(orjson.loads, HOSTILE.read_bytes().splitlines())}


def _shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This run's temp folder, shared by its xdist workers (each worker has a subfolder of it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def page_settings(tmp_path_factory: pytest.TempPathFactory, hf_path: Path) -> Settings:
    """A data folder with the Hugging Face daily papers and the hostile papers, imported by the real code,
    keyword-indexed on the way and embedded (hashing embedder: fast, no model files) into the vector index.

    Building it takes a while, so the first xdist worker builds it under a lock and the others reuse it
    (they only read it).
    """
    root = _shared_root(tmp_path_factory)
    data_dir = root / "web-pages-data"
    settings = Settings(data_dir=data_dir, database_url=None, embedding_backend="fake")
    with (root / "web-pages-data.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (data_dir / "complete").exists():
            shutil.rmtree(data_dir, ignore_errors=True)
            app = build_app(settings)
            try:
                for path in (hf_path, HOSTILE):
                    summary = app.sources.ingest.run(
                        JsonlFileSource(path, batch_size=app.settings.batch_size)
                    )
                    assert summary.rejected == 0, summary.rejects[:3]
                app.indexes.indexer.current().run()
            finally:
                app.close()
            (data_dir / "complete").touch()
    return settings


@pytest.fixture(scope="session")
def client(page_settings: Settings) -> Iterator[TestClient]:
    app = create_app(lambda: build_app(page_settings))
    with TestClient(app, raise_server_exceptions=True, follow_redirects=False) as c:
        yield c


@pytest.fixture(scope="session")
def live_url(page_settings: Settings) -> Iterator[str]:
    """The app under a real uvicorn on a loopback socket we bound ourselves (no port race)."""
    with live_server(page_settings) as url:
        yield url


@pytest.fixture(scope="session")
def browser(chromium_browser: Any) -> Any:
    """The one chromium of this test process (see tests/support/browser.py)."""
    return chromium_browser


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
