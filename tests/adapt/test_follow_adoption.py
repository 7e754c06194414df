"""Running processes follow an adopted model (issue #30, item 1: "anything loaded once must notice").

`paperfeed model adapt` adopts a model by writing `<data_dir>/models/active-model.json`. A server and an
indexer that were already running kept the model they had loaded: the indexer went on embedding with the
old one and the server embedded queries in the old space against vectors of the new. Two compositions on
one folder stand for the two processes; the fake embedder takes the adopted model's id as its key, so the
adoption moves its vectors to another space, as it would a real model's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from paperfeed.adapters.embed.adapted import ModelFolder
from paperfeed.bootstrap import App, build_app
from paperfeed.domain.adaptation import ActiveModel
from paperfeed.domain.ingest import Batch
from paperfeed.settings import Settings
from tests.search.test_hybrid_search import CORPUS, _paper


@pytest.fixture
def two_processes(tmp_path: Path) -> Iterator[tuple[App, App]]:
    settings = Settings(
        data_dir=tmp_path / "data",
        embedding_backend="fake",
        keyword_engine="fts5",
        search_min_dense_score=0.05,
        vector_reload_seconds=0,
    )
    server, indexer = build_app(settings), build_app(settings)
    try:
        yield server, indexer
    finally:
        server.close()
        indexer.close()


def _adopt(data: Path, model_id: str) -> None:
    folder = data / "models" / "adapted" / model_id
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    ModelFolder(data / "models").adopt(
        ActiveModel(model_id=model_id, path=folder, base="", created="2026-11-28T12:00:00+00:00", papers=40)
    )


def test_a_running_server_and_indexer_switch_to_an_adopted_model(two_processes: tuple[App, App]) -> None:
    server, indexer = two_processes
    result = indexer.core.store.apply_batch(Batch(papers=[_paper(r) for r in CORPUS]))
    indexer.indexes.keyword.on_papers_changed(result.changed_ids)
    indexer.indexes.indexer.current().run()
    assert server.search.hybrid.search("protein folding").hits[0].dense_rank is not None
    assert server.indexes.embedders.current().model_id == "fake-hash64"

    _adopt(server.settings.data_dir, "adapted-0123abcd")
    assert indexer.indexes.embedders.follow()
    plan = indexer.indexes.indexer.current().plan()
    assert plan.model_id == "adapted-0123abcd-hash64"
    assert plan.backlog == len(CORPUS)  # every paper re-embedded with the adopted model
    indexer.indexes.indexer.current().run()

    page = server.search.hybrid.search("protein folding")
    assert server.indexes.embedders.current().model_id == "adapted-0123abcd-hash64"
    assert page.hits[0].paper.id == "2401.00003"
    assert page.hits[0].dense_rank is not None, page.notes
    similar = server.search.hybrid.similar("2401.00001")
    assert any(hit.similarity is not None for hit in similar)
    assert not indexer.indexes.embedders.follow()  # nothing changed since
