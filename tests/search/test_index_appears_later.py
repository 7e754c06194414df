"""A serving process that started before anything was embedded turns hybrid once another process embeds.

Issue #30, item 1: after an empty first start the indexer saved an empty vector index; the server opened
it, and search returned early on ``len(index) == 0`` before ever asking whether a newer one was saved, so
it stayed keyword-only (and said "covers none of the papers") until a restart. Two ``App`` objects on one
data folder stand for the two processes of ``paperfeed run`` (the web server and ``index --follow``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.ingest import Batch
from paperfeed.settings import Settings
from tests.search.test_hybrid_search import CORPUS, _paper


@pytest.fixture(params=["fts5", "tantivy", pytest.param("postgres", marks=pytest.mark.postgres)])
def two_processes(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[App, App]]:
    """(server, indexer): two compositions over one data folder and database."""
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    settings = Settings(
        data_dir=tmp_path / "data",
        database_url=url,
        embedding_backend="fake",
        keyword_engine=request.param,
        search_min_dense_score=0.05,
        vector_reload_seconds=0,
    )
    indexer, server = build_app(settings), build_app(settings)
    try:
        yield server, indexer
    finally:
        server.close()
        indexer.close()


def test_search_turns_hybrid_once_the_indexer_fills_an_index_it_first_saved_empty(
    two_processes: tuple[App, App],
) -> None:
    server, indexer = two_processes
    indexer.indexes.indexer.current().run()  # the first start: nothing to embed, an empty index is saved
    first = server.search.hybrid.search("protein")
    assert first.hits == ()
    assert server.indexes.coverage.coverage() is not None

    result = indexer.core.store.apply_batch(Batch(papers=[_paper(r) for r in CORPUS]))
    indexer.indexes.keyword.on_papers_changed(result.changed_ids)
    indexer.indexes.indexer.current().run()  # the import's papers embedded by the other process
    server.indexes.coverage.forget()

    page = server.search.hybrid.search("protein folding")
    assert page.hits, page.notes
    assert any(hit.dense_rank is not None for hit in page.hits), "still keyword-only"
    coverage = server.indexes.coverage.coverage()
    assert coverage is not None
    assert coverage.note() is None, coverage.note()
    similar = server.search.hybrid.similar("2401.00001")
    assert any(hit.similarity is not None for hit in similar), "similar papers still keyword-only"
