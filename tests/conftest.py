"""Shared fixtures: the ../shared data folder, fresh stores on real SQLite files, a loopback server."""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from paperfeed.adapters.store import SqlPaperStore, open_store
from tests.support.http_server import ReplayServer, replay_server

# The recording SMTP server fixture (``smtp_server``) for every test that sends mail.
pytest_plugins = ["tests.support.smtp_server"]

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PAPERFEED_SHARED", ROOT.parent / "shared"))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared; tests that need it skip when it is absent, except in CI where that is a failure."""
    if not SHARED.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{SHARED} is missing in CI")
        pytest.skip("../shared is not present (a user's clone)")
    return SHARED


@pytest.fixture(scope="session")
def hf_path(shared_dir: Path) -> Path:
    """The real Hugging Face daily papers file (~10.6k papers)."""
    return shared_dir / "data" / "hf_daily.jsonl.gz"


@pytest.fixture(scope="session")
def hf_records(hf_path: Path) -> dict[str, dict[str, Any]]:
    """The raw records of that file, read independently of our import code: the tests' oracle."""
    with gzip.open(hf_path, "rb") as fh:
        return {rec["id"]: rec for rec in map(orjson.loads, fh)}


@pytest.fixture
def fixtures_dir(shared_dir: Path) -> Path:
    return shared_dir / "fixtures"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlPaperStore]:
    """A freshly migrated store on a real SQLite file."""
    s = open_store(f"sqlite+pysqlite:///{tmp_path / 'paperfeed.db'}")
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with replay_server() as srv:
        yield srv
