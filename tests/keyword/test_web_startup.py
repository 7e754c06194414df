"""A web process opens a SQLite store's tantivy index before it serves: a missing or outdated index is
built at start-up, not by the first reader who searches or opens a paper page (~35 s at 200k papers)."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import pytest
from fastapi.testclient import TestClient

from paperfeed.adapters.keyword.tantivy_writer import read_state
from paperfeed.bootstrap import build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.settings import Settings
from paperfeed.web import create_app

from .corpus import CORPUS


def _settings(data_dir: Path, engine: Literal["tantivy", "fts5"]) -> Settings:
    return Settings(data_dir=data_dir, database_url=None, embedding_backend="fake", keyword_engine=engine)


def test_the_keyword_index_is_built_before_the_first_request(tmp_path: Path) -> None:
    settings = _settings(tmp_path, "tantivy")
    app = build_app(settings)
    try:
        app.core.store.apply_batch(Batch(papers=list(CORPUS)))  # the store alone: no index follows it yet
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


_OPENER = """
import sys, time
from pathlib import Path
from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings

settings = Settings(data_dir=Path(sys.argv[1]), database_url=None, embedding_backend="fake",
                    keyword_engine="tantivy")
app = build_app(settings)
app.core.store.stats()  # the store is open: only the index is left to race on
start = float(sys.argv[2])
while time.time() < start:
    time.sleep(0.001)
app.indexes.open_local_keyword_index()  # what each web worker's start-up does
print(len(app.indexes.keyword))
app.close()
"""


@pytest.mark.slow
def test_two_workers_starting_at_once_build_one_index_in_turn(tmp_path: Path) -> None:
    """``serve --workers 2`` on a store without its index: both workers open it at start-up at the same
    moment. Each used to wipe the folder and build it while the other wrote there, and tantivy's writer
    died on the vanished files, so the server did not start."""
    settings = _settings(tmp_path, "tantivy")
    papers = [
        Paper(
            id=f"2501.{n:05d}",
            title=f"Study {n} of graph neural networks for molecules",
            abstract="We measure message passing on molecular graphs. " * 30,
            published=datetime(2025, 1, 1 + n % 28, tzinfo=UTC),
        )
        for n in range(6000)
    ]
    app = build_app(settings)
    try:
        app.core.store.apply_batch(Batch(papers=papers))
    finally:
        app.close()
    start = time.time() + 4  # both are up by then, then they open the index together
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _OPENER, str(tmp_path), str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    outcomes = [(child.wait(timeout=300), *child.communicate()) for child in children]
    for code, out, err in outcomes:
        assert code == 0, err.decode()[-2000:]
        assert out.decode().split() == ["6000"]
    assert read_state(tmp_path / "keyword").get("watermark")
