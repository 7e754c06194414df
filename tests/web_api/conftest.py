"""A real SQLite store filled once per session from ../shared/data/hf_daily.jsonl.gz, served three ways.

``web_settings`` points at that store; ``client`` is the ASGI app under Starlette's TestClient (lifespan
runs, so resources come from the composition root as in production); ``live_url`` is the same app
served by uvicorn on a loopback port for clients that need real HTTP (``huggingface_hub``).
``hf_records`` is the raw JSONL, read independently of our import code, as the oracle.
"""

from __future__ import annotations

import gzip
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import uvicorn
from fastapi.testclient import TestClient

from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.bootstrap import App, build_app
from paperfeed.settings import Settings
from paperfeed.web import create_app

HF_FILE = "data/hf_daily.jsonl.gz"


@pytest.fixture(scope="session")
def hf_path(shared_dir: Path) -> Path:
    return shared_dir / HF_FILE


@pytest.fixture(scope="session")
def web_settings(tmp_path_factory: pytest.TempPathFactory, hf_path: Path) -> Settings:
    """Settings of a data folder holding the ~10.6k Hugging Face daily papers, imported by the real code."""
    data_dir = tmp_path_factory.mktemp("web-data")
    settings = Settings(data_dir=data_dir)
    app = build_app(settings)
    try:
        summary = app.ingest.run(JsonlFileSource(hf_path))
        assert summary.rejected == 0, summary.rejects[:3]
    finally:
        app.close()
    return settings


@pytest.fixture(scope="session")
def hf_records(hf_path: Path) -> dict[str, dict[str, Any]]:
    with gzip.open(hf_path, "rb") as fh:
        return {rec["id"]: rec for rec in map(orjson.loads, fh)}


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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def live_url(web_settings: Settings) -> Iterator[str]:
    """The app served by a real uvicorn on a loopback port, in a background thread."""
    port = _free_port()
    config = uvicorn.Config(
        create_app(lambda: build_app(web_settings)), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="paperfeed-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("uvicorn did not start")
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
