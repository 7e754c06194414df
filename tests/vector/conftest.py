"""Fixtures: the synthetic corpus and an index factory parametrised over every implementation.

The contract (``test_contract.py``) runs against the faiss/NumPy folder indexes and against pgvector in a
fresh database of the throwaway PostgreSQL server (marked ``postgres``); the folder's own contract
(``test_persistence.py``, ``test_hnsw_graph.py``) only against the folder indexes.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from paperfeed.adapters.store.sql_store import make_engine
from paperfeed.adapters.vector import StoredVectorIndex
from paperfeed.adapters.vector.pgvector_index import PgVectorIndex
from tests.support import postgres
from tests.vector.corpus import DIM, MODEL, Corpus, make_corpus

# "hnsw-graph" forces every filtered query through the graph walk (never the small-filter brute force), so the
# graph's own filtering and its fall-back are held to the same contract.
VARIANTS: dict[str, dict[str, Any]] = {
    "exact": {"policy": "exact"},
    "hnsw": {"policy": "hnsw"},
    "hnsw-graph": {"policy": "hnsw", "brute_force_share": 0.0},
}
# The same for pgvector: "pgvector-graph" never scores the rows a filter leaves exactly.
PG_VARIANTS: dict[str, dict[str, Any]] = {
    "pgvector": {},
    "pgvector-graph": {"brute_force_rows": 0},
}

Opener = Callable[..., StoredVectorIndex]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "variant" in metafunc.fixturenames:
        names: list[Any] = sorted(VARIANTS)
        if metafunc.module.__name__.endswith("test_contract"):
            names += [pytest.param(name, marks=pytest.mark.postgres) for name in sorted(PG_VARIANTS)]
        metafunc.parametrize("variant", names)


@pytest.fixture(scope="session")
def corpus() -> Corpus:
    return make_corpus(3000)


class PgResources:
    """This test's PostgreSQL database, and the indexes and engines opened on it (closed before it is
    dropped)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.indexes: list[PgVectorIndex] = []
        self.engines: list[Engine] = []

    def open(self, url: str | None = None, **options: Any) -> PgVectorIndex:
        engine = make_engine(url or self.url)
        self.engines.append(engine)
        index = PgVectorIndex(engine, **options)
        self.indexes.append(index)
        return index

    def close(self) -> None:
        for index in self.indexes:
            index.close()
        for engine in self.engines:
            engine.dispose()


@pytest.fixture
def pg(variant: str, request: pytest.FixtureRequest) -> Iterator[PgResources | None]:
    """For the pgvector variants: a fresh database (set up first, so it is dropped last)."""
    if variant not in PG_VARIANTS:
        yield None
        return
    resources = PgResources(request.getfixturevalue("pg_url"))
    yield resources
    resources.close()


@pytest.fixture
def open_index(variant: str, tmp_path: Path, pg: PgResources | None) -> Opener:
    """``open_index(path=None, model_id=MODEL, dimension=DIM)`` for the current variant."""
    if pg is not None:

        def pg_opener(
            _path: Path | None = None, *, model_id: str = MODEL, dimension: int = DIM
        ) -> StoredVectorIndex:
            index = pg.open(model_id=model_id, dimension=dimension, **PG_VARIANTS[variant])
            return index  # type: ignore[return-value]  # the same port, duck-typed for the tests

        return pg_opener

    def opener(path: Path | None = None, *, model_id: str = MODEL, dimension: int = DIM) -> StoredVectorIndex:
        return StoredVectorIndex(
            path or tmp_path / "vectors", model_id=model_id, dimension=dimension, **VARIANTS[variant]
        )

    return opener


@pytest.fixture(scope="session")
def saved_corpora(tmp_path_factory: pytest.TempPathFactory, corpus: Corpus) -> dict[str, Path]:
    """The corpus indexed and saved once per variant; tests get a private copy (building is the slow part)."""
    out = {}
    for name, options in VARIANTS.items():
        path = tmp_path_factory.mktemp(name) / "vectors"
        index = StoredVectorIndex(path, model_id=MODEL, dimension=DIM, **options)
        index.upsert(corpus.records)
        index.save()
        out[name] = path
    return out


@pytest.fixture(scope="session")
def pg_corpus_template(pg_server: postgres.PgServer, corpus: Corpus) -> Iterator[str]:
    """A database holding the corpus in a saved pgvector index (this worker's: tests never commit to it)."""
    name = postgres.create_database(pg_server)
    engine = make_engine(pg_server.url(name))
    try:
        index = PgVectorIndex(engine, model_id=MODEL, dimension=DIM)
        index.upsert(corpus.records)
        index.save()
    finally:
        engine.dispose()
    try:
        yield name
    finally:
        postgres.drop_database(pg_server, name)


@pytest.fixture
def filled(
    open_index: Opener, variant: str, request: pytest.FixtureRequest, tmp_path: Path, pg: PgResources | None
) -> StoredVectorIndex:
    """A private, already saved index of the 3000-paper corpus.

    pgvector: the session's saved corpus, whose changes in this test stay in the index's write
    transaction and are rolled back when the test ends (copying a database per test cost ~1 s).
    """
    if pg is not None:
        server: postgres.PgServer = request.getfixturevalue("pg_server")
        template = request.getfixturevalue("pg_corpus_template")
        index = pg.open(server.url(template), model_id=MODEL, dimension=DIM, **PG_VARIANTS[variant])
        return index  # type: ignore[return-value]
    shutil.copytree(request.getfixturevalue("saved_corpora")[variant], tmp_path / "vectors")
    return open_index(tmp_path / "vectors")
