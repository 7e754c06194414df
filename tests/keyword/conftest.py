"""Keyword index fixtures: each contract test runs against both engines on a real SQLite store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from paperfeed.adapters.keyword.factory import SyncedKeywordIndex, open_keyword_index
from paperfeed.adapters.store import open_store
from paperfeed.services.ingest import IngestService

from .corpus import CORPUS, CROWD, batches
from .sources import ListSource


@pytest.fixture(scope="module", params=["fts5", "tantivy"])
def keyword(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SyncedKeywordIndex]:
    """The index opened on an empty store, then fed the corpus through the ingest listener.

    Module-scoped (read-only tests share it); tests that write build their own.
    """
    root = tmp_path_factory.mktemp(f"kw-{request.param}")
    store = open_store(f"sqlite+pysqlite:///{root / 'paperfeed.db'}")
    index = open_keyword_index(request.param, store.engine, root)
    IngestService(store, listeners=[index.on_papers_changed]).run(ListSource(list(batches(CORPUS + CROWD))))
    index.flush()
    try:
        yield index
    finally:
        index.close()
        store.close()
