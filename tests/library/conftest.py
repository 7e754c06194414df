"""A real SQLite store with two readers and a few synthetic papers; the arXiv API on a loopback server."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import insert

from paperfeed.adapters.store.schema_accounts import users
from paperfeed.bootstrap import App, build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.settings import Settings
from tests.support.http_server import ReplayServer
from tests.support.papers import paper as make_paper

DATA = Path(__file__).resolve().parent / "data"
API_PATH = "/api/query"
RECORDED = "arxiv_atom_api/new_format_2026_lukasschwab_arxiv.py_recorded_json"


def paper(
    paper_id: str, title: str, authors: tuple[str, ...] = ("Ada Lovelace",), day: str = "2024-01-02"
) -> Paper:
    return make_paper(
        paper_id,
        title,
        day=day,
        updated=True,
        source=day,
        abstract=f"{title}. A synthetic abstract about graph neural networks and diffusion.",
        authors=authors,
        categories=("cs.LG",),
    )


PAPERS = [
    paper("2401.00001", "Alpha: a synthetic paper", ("Ada Lovelace", "Alan Turing")),
    paper("2402.00002", "Beta diffusion models", ("José García",), day="2024-02-03"),
    paper("hep-th/9901001", "An old-style string theory paper", ("Grace Hopper",), day="1999-01-04"),
    paper("2403.00003", "Gamma graph networks", ("Jose Garcia", "Ada Lovelace"), day="2024-03-05"),
    paper("2404.00004", "Delta diffusion transformers", ("Joséphine Garcia",), day="2024-04-06"),
]


def add_user(app: App, email: str, name: str, *, role: str = "user", hidden: bool = False) -> int:
    now = datetime.now(UTC)
    with app.core.store.engine.begin() as conn:
        result = conn.execute(
            insert(users).values(
                email=email, display_name=name, role=role, created_at=now, hidden_at=now if hidden else None
            )
        )
        key = result.inserted_primary_key
        assert key is not None
        return int(key[0])


def make_settings(tmp_path: Path, api_url: str = "http://127.0.0.1:9/api/query") -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        database_url=None,
        embedding_backend="fake",
        arxiv_api_url=api_url,
        arxiv_delay=0,
        http_retries=0,
        http_timeout=2,
    )


@pytest.fixture
def app(tmp_path: Path, server: ReplayServer) -> Iterator[App]:
    """An App on a fresh data folder with :data:`PAPERS` stored and keyword-indexed."""
    built = build_app(make_settings(tmp_path, server.base_url + API_PATH))
    built.core.store.apply_batch(Batch(papers=list(PAPERS)))
    built.indexes.keyword  # noqa: B018 - opening it indexes the papers above
    try:
        yield built
    finally:
        built.close()


@pytest.fixture
def ada(app: App) -> int:
    return add_user(app, "ada@example.org", "Ada")


@pytest.fixture
def bob(app: App) -> int:
    return add_user(app, "bob@example.org", "Bob")


@pytest.fixture
def recorded_dir(shared_dir: Path) -> Path:
    return shared_dir / "fixtures" / RECORDED
