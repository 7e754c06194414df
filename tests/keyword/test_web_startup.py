"""A web process opens a SQLite store's tantivy index before it serves: a missing or outdated index is
built at start-up, not by the first reader who searches or opens a paper page (~35 s at 200k papers)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from fastapi.testclient import TestClient

from paperfeed.adapters.keyword.tantivy_writer import read_state
from paperfeed.bootstrap import build_app
from paperfeed.domain.ingest import Batch
from paperfeed.settings import Settings
from paperfeed.web import create_app

from .corpus import CORPUS


def _settings(data_dir: Path, engine: Literal["tantivy", "fts5"]) -> Settings:
    return Settings(data_dir=data_dir, database_url=None, embedding_backend="fake", keyword_engine=engine)


def test_the_keyword_index_is_built_before_the_first_request(tmp_path: Path) -> None:
    settings = _settings(tmp_path, "tantivy")
    app = build_app(settings)
    try:
        app.store.apply_batch(Batch(papers=list(CORPUS)))  # the store alone: no index follows it yet
    finally:
        app.close()
    folder = tmp_path / "keyword"
    assert not folder.exists()
    with TestClient(create_app(lambda: build_app(settings))) as client:
        assert read_state(folder).get("watermark"), "start-up did not build the index"
        hits = client.get("/api/papers/search", params={"q": CORPUS[0].title}).json()
        assert CORPUS[0].id in [h["paper"]["id"] for h in hits]


def test_an_engine_in_the_store_builds_nothing_on_disk(tmp_path: Path) -> None:
    settings = _settings(tmp_path, "fts5")
    with TestClient(create_app(lambda: build_app(settings))):
        assert not (tmp_path / "keyword").exists()
