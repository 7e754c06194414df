"""Shared fixtures: the ../shared data folder, fresh stores on both backends, a loopback server.

``store`` (and ``db_url`` for tests that open stores themselves) run every test that uses them twice: on
a real SQLite file and on a fresh database of a real throwaway PostgreSQL server with pgvector
(``tests/support/postgres.py``), marked ``postgres`` so ``-m "not postgres"`` skips the latter.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from paperfeed.adapters.store import SqlPaperStore, open_store
from tests.support import postgres
from tests.support.http_server import ReplayServer, replay_server

# The recording SMTP server fixture (``smtp_server``) for every test that sends mail.
pytest_plugins = ["tests.support.smtp_server", "tests.support.browser"]

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


# The two store backends every ``store``/``db_url`` test runs on.
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def session_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This run's temp folder, shared by its xdist workers (each worker has a subfolder of it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session", autouse=True)
def onnx_model_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """PAPERFEED_MODEL_CACHE for every App and child process of the run: one ONNX export per run (the
    same folder as tests/embed's ``model_cache``), never the developer's own ~/.cache/paperfeed."""
    folder = session_root(tmp_path_factory) / "onnx-models"
    folder.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PAPERFEED_MODEL_CACHE", str(folder))
        yield folder


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[postgres.PgServer]:
    """One throwaway PostgreSQL (with pgvector) for the whole run, shared by the xdist workers."""
    root = session_root(tmp_path_factory) / "postgres"
    try:
        server = postgres.acquire_server(root)
    except postgres.PostgresUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL for the tests: {exc}")
        pytest.skip(f"PostgreSQL for the tests: {exc}")
    try:
        yield server
    finally:
        postgres.release_server(root)


@pytest.fixture
def pg_url(pg_server: postgres.PgServer) -> Iterator[str]:
    """A fresh, migrated PostgreSQL database for one test (dropped afterwards)."""
    with postgres.database(pg_server) as url:
        yield url


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty store: a SQLite file, then a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite+pysqlite:///{tmp_path / 'paperfeed.db'}"
        return
    with postgres.database(request.getfixturevalue("pg_server")) as url:
        yield url


@pytest.fixture
def store(db_url: str) -> Iterator[SqlPaperStore]:
    """A freshly migrated store: on a real SQLite file, and again on a real PostgreSQL database."""
    s = open_store(db_url)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with replay_server() as srv:
        yield srv


def pytest_configure(config: pytest.Config) -> None:
    """Tests search many times a minute from one address (the test client), so the anonymous search limit
    is off unless a test sets it (tests/security/test_search_rate_limit.py does)."""
    os.environ.setdefault("PAPERFEED_SEARCH_RATE_PER_MINUTE", "0")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the PostgreSQL variants (marked ``postgres``) of tests about SQLite itself: marked
    ``sqlite_only``, or named for FTS5 (SQLite's own keyword table)."""
    dropped = [
        item
        for item in items
        if item.get_closest_marker("postgres") is not None
        and (item.get_closest_marker("sqlite_only") is not None or "fts5" in item.name)
    ]
    if dropped:
        gone = set(dropped)
        items[:] = [item for item in items if item not in gone]
        config.hook.pytest_deselected(items=dropped)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The xdist controller stops the shared PostgreSQL should a worker have died holding it."""
    config = session.config
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return  # a worker, or a run without workers (the fixture's teardown stopped it)
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is not None:
        postgres.stop_recorded_server(factory.getbasetemp() / "postgres")
