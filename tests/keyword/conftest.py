"""Keyword index fixtures: each contract test runs against every engine on a real store.

FTS5 and tantivy run on a SQLite store, PostgreSQL full-text search on a fresh database of the throwaway
PostgreSQL server (marked ``postgres``). Tests named for FTS5 (SQLite's own table) run on SQLite only
(tests/conftest.py leaves out their PostgreSQL variant).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from paperfeed.adapters.keyword.factory import open_keyword_index
from paperfeed.adapters.store import open_store
from paperfeed.domain.search import SyncedKeywordIndex
from paperfeed.services.ingest import IngestService
from tests.support import postgres

from .corpus import CORPUS, CROWD, batches
from .sources import ListSource

ENGINES = ["fts5", "tantivy", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(scope="module", params=ENGINES)
def keyword(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SyncedKeywordIndex]:
    """The index opened on an empty store, then fed the corpus through the ingest listener.

    Module-scoped (read-only tests share it); tests that write build their own.
    """
    root = tmp_path_factory.mktemp(f"kw-{request.param}")
    with _store_url(request, root) as url:
        store = open_store(url)
        index = open_keyword_index(request.param, store.engine, root)
        IngestService(store, indexes=[index]).run(ListSource(list(batches(CORPUS + CROWD))))
        index.flush()
        try:
            yield index
        finally:
            index.close()
            store.close()


def _store_url(request: pytest.FixtureRequest, root: Path) -> contextlib.AbstractContextManager[str]:
    if request.param == "postgres":
        return postgres.database(request.getfixturevalue("pg_server"))
    return contextlib.nullcontext(f"sqlite+pysqlite:///{root / 'paperfeed.db'}")
