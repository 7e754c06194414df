"""A web process loads the embedding model at start, in the background (issue #39 item 5).

The first semantic request after a start used to load the model itself (26 s on a loaded machine; a
library search timed out at 30 s). Now ``serve`` loads it as soon as there are vectors to search, and a
search arriving meanwhile does not wait for it: it answers at once with keyword matches and says why.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from fastapi.testclient import TestClient

from paperfeed.adapters.embed.fake import FakeEmbedder
from paperfeed.bootstrap import App, build_app
from paperfeed.domain.search import MODEL_LOADING_NOTE
from paperfeed.settings import Settings
from paperfeed.web.app import create_app
from tests.indexing.conftest import add_papers, paper


class _Loading(FakeEmbedder):
    """The configured fake model, whose loading (its first embed) lasts until ``loaded`` is set."""

    def __init__(self, name: str, loaded: threading.Event) -> None:
        super().__init__(64, name=name)
        self.loaded = loaded

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        assert self.loaded.wait(60), "the test never let the model load"
        return super().embed(texts)


class _Opener:
    def __init__(self, embedder: FakeEmbedder) -> None:
        self.embedder = embedder

    def open(self, backend: str | None = None, *, queries: bool = False) -> FakeEmbedder:
        return self.embedder

    def adopted_stamp(self) -> None:
        return None


def _indexed(tmp_path: Path) -> tuple[App, Settings]:
    settings = Settings(
        data_dir=tmp_path / "data", embedding_backend="fake", keyword_engine="fts5", database_url=None
    )
    app = build_app(settings)
    add_papers(app.core.store, [paper(i) for i in range(1, 21)])
    app.indexes.indexer.current().run()
    return app, settings


def _wait(condition: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.02)


def test_a_search_while_the_model_loads_answers_at_once_with_keyword_matches(tmp_path: Path) -> None:
    indexed, settings = _indexed(tmp_path)
    indexed.close()
    app = build_app(settings)  # a web process, started after the indexing
    loaded = threading.Event()
    try:
        model = _Loading(app.indexes.embedders.current().model_id.removesuffix("-hash64"), loaded)
        app.indexes.embedders.opener = _Opener(model)
        app.indexes.embedders._embedder = None  # the process's embedder is made by the warm-up
        app.indexes.warm_up()
        _wait(app.indexes.embedders.loading)
        page = app.search.hybrid.search("graph neural networks for molecules")  # would block if it waited
        assert MODEL_LOADING_NOTE in page.notes
        assert page.hits  # keyword matches, at once
        reader = app.readers.accounts.add_confirmed("ada@example.org", "correct horse battery")
        app.readers.library.save(reader.id, "2501.00005")
        mine = app.readers.library_search.search(reader.id, "graph neural networks")  # nor a library search
        assert MODEL_LOADING_NOTE in mine.notes
        assert [hit.paper.id for hit in mine.hits] == ["2501.00005"]  # by its words
        loaded.set()
        _wait(lambda: not app.indexes.embedders.loading())
        again = app.search.hybrid.search("graph neural networks for molecules")
        assert MODEL_LOADING_NOTE not in again.notes
        assert any(hit.dense_rank is not None for hit in again.hits)  # meaning search is back
    finally:
        loaded.set()
        app.close()


class _Counting(FakeEmbedder):
    """The configured fake model, counting what it embeds (its first embed is its loading)."""

    def __init__(self, name: str) -> None:
        super().__init__(64, name=name)
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        return super().embed(texts)


def _serving(settings: Settings) -> tuple[list[_Counting], Any]:
    """``create_app`` of a served process whose embedder counts its calls."""
    made: list[_Counting] = []

    def build() -> App:
        app = build_app(settings)
        model = _Counting(app.indexes.embedders.current().model_id.removesuffix("-hash64"))
        app.indexes.embedders.opener = _Opener(model)
        app.indexes.embedders._embedder = None
        made.append(model)
        return app

    return made, create_app(build, serving=True)


def test_serve_loads_the_model_before_any_request_once_there_are_vectors(tmp_path: Path) -> None:
    indexed, settings = _indexed(tmp_path)
    indexed.close()
    made, web = _serving(settings)
    with TestClient(web):
        _wait(lambda: made and made[0].calls >= 1)  # no request asked for it


def test_an_empty_instance_loads_no_model(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path / "data", embedding_backend="fake", keyword_engine="fts5", database_url=None
    )
    made, web = _serving(settings)
    with TestClient(web) as client:
        assert client.get("/api/daily_papers").status_code == 200
        time.sleep(0.5)
        assert made[0].calls == 0  # nothing to search by meaning: the model is not loaded
