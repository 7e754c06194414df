"""The PostgreSQL backend's own pieces: migrations, URL handling, accent folding, the keyword index
following the store, pgvector's swap-in rebuilds, and the whole app (import, index, search) on it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import inspect, text

from paperfeed.adapters.keyword.folding import fold
from paperfeed.adapters.keyword.postgres_fts import PostgresKeywordIndex
from paperfeed.adapters.store import migrate, open_store
from paperfeed.adapters.store.schema import metadata
from paperfeed.adapters.store.sql_store import make_engine, normalise_url
from paperfeed.adapters.vector.pgvector_index import PgVectorIndex, stored_manifest
from paperfeed.bootstrap import build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.query import parse_query
from paperfeed.domain.search import VectorIndexMismatch, VectorRecord
from paperfeed.settings import Settings
from tests.keyword.sources import ListSource
from tests.support import postgres
from tests.support.papers import paper as make_paper

pytestmark = pytest.mark.postgres


def paper(pid: str, title: str, abstract: str = "Filler text about nothing.", **kw: Any) -> Paper:
    return make_paper(
        pid,
        title,
        day="2024-05-01",
        abstract=abstract,
        authors=("Ada Lovelace",),
        categories=("cs.LG",),
        **kw,
    )


def test_normalise_url_picks_psycopg_3() -> None:
    assert normalise_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalise_url("postgres://u:p@h:5433/db") == "postgresql+psycopg://u:p@h:5433/db"
    assert normalise_url("postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalise_url("sqlite+pysqlite:///x.db") == "sqlite+pysqlite:///x.db"


def test_migrations_create_the_declared_schema_plus_the_search_column(pg_url: str) -> None:
    store = open_store(pg_url.replace("postgresql+psycopg://", "postgresql://"))
    try:
        insp = inspect(store.engine)
        for table in metadata.sorted_tables:
            have = {c["name"] for c in insp.get_columns(table.name)}
            extra = {"search_tsv"} if table.name == "papers" else set()
            assert have == {c.name for c in table.columns} | extra, table.name
            assert {i.name for i in table.indexes} <= {i["name"] for i in insp.get_indexes(table.name)}
        assert "ix_papers_search" in {i["name"] for i in insp.get_indexes("papers")}
        assert migrate.current_revision(store.engine) == migrate.head_revision()
        migrate.downgrade(store.engine, "base")
        assert "papers" not in inspect(store.engine).get_table_names()
        migrate.upgrade(store.engine)
        assert "search_tsv" in {c["name"] for c in inspect(store.engine).get_columns("papers")}
    finally:
        store.close()


def test_several_processes_starting_at_once_migrate_once(pg_server: postgres.PgServer) -> None:
    name = postgres.create_database(pg_server, template="template0")  # empty: no schema yet
    url = pg_server.url(name)
    errors: list[BaseException] = []
    go = threading.Barrier(4)

    def start() -> None:
        try:
            go.wait()
            open_store(url).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        engine = make_engine(url)
        assert migrate.current_revision(engine) == migrate.head_revision()
        engine.dispose()
    finally:
        postgres.drop_database(pg_server, name)


def test_sql_fold_is_pythons_fold(store_pg: object) -> None:
    engine = store_pg.engine  # type: ignore[attr-defined]
    chars = [chr(cp) for cp in range(0x20, 0x250) if chr(cp).isprintable()] + list("ŁłØøĐđĦħıŦŧάйİ한ﬁ²")
    with engine.connect() as conn:
        folded = conn.execute(text("SELECT paperfeed_fold(:t)"), {"t": "".join(chars)}).scalar_one()
    assert folded == fold("".join(chars), "marks")
    assert fold("Naïve résumé, Łódź", "marks") == "Naive resume, Lodz"


@pytest.fixture
def store_pg(pg_url: str):  # type: ignore[no-untyped-def]
    s = open_store(pg_url)
    yield s
    s.close()


def test_keyword_index_follows_every_change_in_the_same_transaction(store_pg: object) -> None:
    store = store_pg
    index = PostgresKeywordIndex(store.engine)  # type: ignore[attr-defined]

    def ids(q: str) -> list[str]:
        return [h.paper_id for h in index.search(parse_query(q), 10)]

    store.apply_batch(Batch(papers=[paper("1", "Quokka census"), paper("2", "Wombat census")]))  # type: ignore[attr-defined]
    assert sorted(ids("census")) == ["1", "2"]
    store.apply_batch(Batch(papers=[paper("1", "Platypus census", version=2)]))  # type: ignore[attr-defined]
    assert ids("quokka") == []
    assert ids("platypus") == ["1"]
    with store.engine.begin() as conn:  # type: ignore[attr-defined]
        conn.execute(text("UPDATE papers SET upvotes = 5 WHERE id = '2'"))  # text unchanged: kept
        conn.execute(text("DELETE FROM papers WHERE id = '1'"))
    assert ids("census") == ["2"]
    assert len(index) == 1
    assert index.rebuild() == 1
    assert ids("wombat") == ["2"]


def test_phrases_do_not_run_across_fields_or_author_names(store_pg: object) -> None:
    store = store_pg
    store.apply_batch(  # type: ignore[attr-defined]
        Batch(
            papers=[
                Paper(
                    id="x",
                    title="Deep quokka",
                    abstract="Tracking methods.",
                    authors=("Ada Lovelace", "Charles Babbage"),
                    categories=("cs.LG",),
                )
            ]
        )
    )
    index = PostgresKeywordIndex(store.engine)  # type: ignore[attr-defined]
    assert [h.paper_id for h in index.search(parse_query('"deep quokka"'), 5)] == ["x"]
    assert index.search(parse_query('"quokka tracking"'), 5) == []
    assert index.search(parse_query('author:"lovelace charles"'), 5) == []
    assert [h.paper_id for h in index.search(parse_query('author:"charles babbage"'), 5)] == ["x"]


def _records(n: int, dim: int, seed: int = 0) -> list[VectorRecord]:
    rng = np.random.default_rng(seed)
    return [
        VectorRecord(f"p{i:04d}", rng.standard_normal(dim).astype(np.float32), None, ("cs.LG",), False)
        for i in range(n)
    ]


def test_pgvector_rebuild_is_invisible_until_saved_then_swapped_in(pg_url: str) -> None:
    writer_engine, reader_engine = make_engine(pg_url), make_engine(pg_url)
    try:
        first = _records(50, 8)
        index = PgVectorIndex(writer_engine, model_id="m1", dimension=8)
        index.upsert(first)
        index.save()
        reader = PgVectorIndex(reader_engine, model_id="m1", dimension=8)
        assert len(reader) == 50
        query = first[3].vector
        assert reader.search(query, 1)[0].paper_id == "p0003"

        rebuild = PgVectorIndex(writer_engine, model_id="m1", dimension=8, fresh=True)
        rebuild.upsert(_records(20, 8, seed=1))
        assert len(rebuild) == 20
        assert len(reader) == 50  # readers keep the old index while the new one is built
        assert reader.search(query, 1)[0].paper_id == "p0003"
        assert reader.reload_if_changed() is False
        rebuild.save()
        assert reader.reload_if_changed() is True
        assert len(reader) == 20
        assert stored_manifest(reader_engine) is not None

        other = PgVectorIndex(writer_engine, model_id="m2", dimension=4, fresh=True)
        other.upsert(_records(5, 4))
        other.save()
        with pytest.raises(VectorIndexMismatch, match=r"built with model 'm2' \(dimension 4\).*rebuild"):
            reader.reload_if_changed()
        with pytest.raises(VectorIndexMismatch):
            PgVectorIndex(reader_engine, model_id="m1", dimension=8)
    finally:
        writer_engine.dispose()
        reader_engine.dispose()


def test_unsaved_changes_are_rolled_back_on_close(pg_url: str) -> None:
    engine = make_engine(pg_url)
    try:
        index = PgVectorIndex(engine, model_id="m", dimension=8)
        index.upsert(_records(10, 8))
        index.save()
        index.remove(["p0001", "p0002"])
        assert len(index) == 8
        index.close()
        assert len(PgVectorIndex(engine, model_id="m", dimension=8)) == 10
    finally:
        engine.dispose()


def test_the_whole_app_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    """Import, embed (hashing embedder), then hybrid search and similar papers, all on PostgreSQL."""
    settings = Settings(data_dir=tmp_path, database_url=pg_url, embedding_backend="fake")
    app = build_app(settings)
    try:
        assert app.indexes.keyword.name == "postgres"
        topics = ["quokka tracking with drones", "protein folding", "galaxy clusters", "speech recognition"]
        papers = [
            paper(f"2401.{i:05d}", f"{topics[i % 4].title()} study {i}", f"We study {topics[i % 4]}.")
            for i in range(40)
        ]
        app.sources.ingest.run(ListSource([Batch(papers=papers)]))
        summary = app.indexes.indexer.current().run()
        assert summary.embedded == 40
        assert summary.index is not None
        assert summary.index.size == 40
        assert not (tmp_path / "vectors").exists()  # the vectors live in PostgreSQL
        page = app.search.hybrid.search("quokka drones")
        assert page.hits
        assert all("Quokka" in h.paper.title for h in page.hits[:10])
        assert any(h.dense_rank is not None for h in page.hits)
        assert page.hits[0].title_spans
        similar = app.search.hybrid.similar("2401.00000", limit=5)
        assert similar
        assert all("Quokka" in h.paper.title for h in similar)
    finally:
        app.close()
