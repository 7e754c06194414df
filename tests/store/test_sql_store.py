from __future__ import annotations

import sqlite3
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, text

from paperfeed.adapters.store import SqlPaperStore, migrate, open_store
from paperfeed.adapters.store.schema import metadata
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Listing, Paper
from tests.support.papers import paper as make_paper

T = datetime(2025, 3, 1, 12, tzinfo=UTC)


def p(pid: str, **kw: Any) -> Paper:
    kw.setdefault("title", f"Title {pid}")
    kw.setdefault("abstract", "Abstract")
    kw.setdefault("authors", ("A B",))
    return make_paper(pid, **kw)


def test_round_trip_keeps_every_field(store: SqlPaperStore) -> None:
    full = p(
        "2503.00001",
        authors=("Ada Lovelace", "Alan Turing"),
        categories=("cs.CL", "cs.AI"),
        version=3,
        published=T,
        updated=T,
        comment="12 pages",
        journal_ref="J. X 1 (2025)",
        doi="10.1/abc",
        license="http://creativecommons.org/licenses/by/4.0/",
        github_repo="https://github.com/x/y",
        github_stars=42,
        project_page="https://x.github.io",
        upvotes=7,
        num_comments=2,
        organization="Org",
        ai_summary="Summary",
        ai_keywords=("a", "b"),
        sources={"hf-daily": "2025-03-01T12:00:00Z"},
    )
    store.apply_batch(Batch(papers=[full]))
    assert store.get_paper("2503.00001") == full
    assert store.get_paper("missing") is None


@pytest.mark.sqlite_only
def test_bulk_writes_store_exactly_what_sqlalchemy_stores(tmp_path: Path) -> None:
    """SQLite's bulk path (own parameter conversion) writes the same bytes as SQLAlchemy's executemany."""
    local = datetime.fromisoformat("2025-03-01T14:30:00.123456+02:00")
    first = [
        p("2503.00001", authors=("Ada Lovelace", "Zoë Ünïcode"), categories=("cs.CL",), published=T),
        p("2503.00002", published=local, updated=local, ai_keywords=("k",), upvotes=3, version=2),
        p("hep-th/9901001", abstract="", authors=(), sources={"file:x": "2025-03-01T12:00:00Z"}),
    ]
    second = [p("2503.00002", upvotes=9, version=3, title="New title", updated=T), p("2503.00003")]
    day = date(2025, 3, 1)

    def run(bulk: bool) -> list[list[tuple[object, ...]]]:
        store = open_store(f"sqlite+pysqlite:///{tmp_path / f'bulk{bulk}.db'}")
        if not bulk:
            store._bulk = None
        try:
            store.apply_batch(
                Batch(
                    papers=first,
                    listings=[Listing(day, "2503.00001", "hf-daily", 4, 0)],
                    ledger_source="file:x",
                    fingerprints={"a": ("2503.00001", "f1"), "b": ("2503.00002", "f2")},
                )
            )
            store.apply_batch(
                Batch(
                    papers=second,
                    listings=[Listing(day, "2503.00001", "hf-daily", 6, None)],
                    ledger_source="file:x",
                    fingerprints={"b": ("2503.00002", "f3")},
                )
            )
            with store.engine.connect() as conn:
                return [
                    [tuple(r) for r in conn.exec_driver_sql(f"SELECT * FROM {table} ORDER BY 1, 2")]
                    for table in ("papers", "listings", "source_records")
                ]
        finally:
            store.close()

    def stable(tables: list[list[tuple[object, ...]]]) -> list[list[tuple[object, ...]]]:
        papers, *rest = tables  # created_at and modified_at are the write time (by name: 0018 added columns)
        with sqlite3.connect(tmp_path / "bulkTrue.db") as conn:
            names = [r[1] for r in conn.execute("PRAGMA table_info(papers)")]
        keep = [i for i, name in enumerate(names) if name not in ("created_at", "modified_at")]
        return [[tuple(row[i] for i in keep) for row in papers], *rest]

    bulk, plain = run(True), run(False)
    assert stable(bulk) == stable(plain)
    assert len(bulk[0]) == 4
    assert bulk[1] == [("2025-03-01", "hf-daily", "2503.00001", 6, 0)]


def test_counts_added_updated_unchanged(store: SqlPaperStore) -> None:
    r1 = store.apply_batch(Batch(papers=[p("2503.00001"), p("2503.00002")]))
    assert (r1.added, r1.updated, r1.unchanged) == (2, 0, 0)
    assert set(r1.changed_ids) == {"2503.00001", "2503.00002"}
    r2 = store.apply_batch(Batch(papers=[p("2503.00001"), p("2503.00002", upvotes=3)]))
    assert (r2.added, r2.updated, r2.unchanged) == (0, 1, 1)
    assert r2.changed_ids == ("2503.00002",)


def test_duplicates_inside_one_batch_merge(store: SqlPaperStore) -> None:
    r = store.apply_batch(Batch(papers=[p("2503.00001", upvotes=1), p("2503.00001", upvotes=5)]))
    assert r.added == 1
    stored = store.get_paper("2503.00001")
    assert stored is not None
    assert stored.upvotes == 5


def test_listings_upsert_keeps_max_upvotes(store: SqlPaperStore) -> None:
    day = date(2025, 3, 1)
    store.apply_batch(
        Batch(papers=[p("2503.00001")], listings=[Listing(day, "2503.00001", "hf-daily", 5, 0)])
    )
    store.apply_batch(Batch(listings=[Listing(day, "2503.00001", "hf-daily", 3, None)]))
    store.apply_batch(Batch(listings=[Listing(day, "2503.00001", "hf-daily", 9, 1)]))
    assert store.listings_for_day(day) == [Listing(day, "2503.00001", "hf-daily", 9, 1)]
    assert store.listings_for_day(date(2025, 3, 2)) == []


def test_listing_for_unknown_paper_fails_the_whole_batch(store: SqlPaperStore) -> None:
    day = date(2025, 3, 1)
    bad = Batch(
        papers=[p("2503.00001")], listings=[Listing(day, "2503.99999", "hf-daily")], checkpoint=("c", "1")
    )
    with pytest.raises(Exception, match=r"(?i)foreign key"):
        store.apply_batch(bad)
    # nothing half-written: neither the paper nor the checkpoint
    assert store.get_paper("2503.00001") is None
    assert store.get_checkpoint("c") is None


def test_checkpoint_commits_with_the_batch(store: SqlPaperStore) -> None:
    store.apply_batch(Batch(papers=[p("2503.00001")], checkpoint=("oai:x", '{"token": "a"}')))
    assert store.get_checkpoint("oai:x") == '{"token": "a"}'
    store.apply_batch(Batch(checkpoint=("oai:x", '{"token": "b"}')))
    assert store.get_checkpoint("oai:x") == '{"token": "b"}'
    store.clear_checkpoint("oai:x")
    assert store.get_checkpoint("oai:x") is None


def test_ledger_fingerprints(store: SqlPaperStore) -> None:
    batch = Batch(
        papers=[p("2503.00001")], ledger_source="file:x", fingerprints={"2503.00001": ("2503.00001", "f1")}
    )
    store.apply_batch(batch)
    assert store.known_fingerprints("file:x", ["2503.00001", "nope"]) == {"2503.00001": "f1"}
    assert store.known_fingerprints("file:y", ["2503.00001"]) == {}


def test_iter_papers_pages_through_everything(store: SqlPaperStore) -> None:
    store.apply_batch(Batch(papers=[p(f"2503.{i:05d}") for i in range(1, 26)]))
    pages = list(store.iter_papers(batch_size=10))
    assert [len(pg) for pg in pages] == [10, 10, 5]
    assert len({x.id for pg in pages for x in pg}) == 25


def test_stats(store: SqlPaperStore) -> None:
    store.apply_batch(
        Batch(
            papers=[
                p("2503.00001", published=T, sources={"a": "2025"}),
                p("2503.00002", sources={"a": "1", "b": "2"}),
            ],
            listings=[Listing(date(2025, 3, 1), "2503.00001", "hf-daily")],
        )
    )
    s = store.stats()
    assert (s.papers, s.listings, s.listing_days) == (2, 1, 1)
    assert s.by_source == {"a": 2, "b": 1}
    assert s.first_published == "2025-03-01"


@pytest.mark.sqlite_only
def test_sqlite_runs_in_wal_mode(store: SqlPaperStore) -> None:
    with store.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1


def test_migrations_create_exactly_the_declared_schema(tmp_path: Path) -> None:
    store = open_store(f"sqlite+pysqlite:///{tmp_path / 'm.db'}")
    try:
        insp = inspect(store.engine)
        for table in metadata.sorted_tables:
            have = {c["name"] for c in insp.get_columns(table.name)}
            assert have == {c.name for c in table.columns}, table.name
            indexes = {i["name"] for i in insp.get_indexes(table.name)}
            assert {i.name for i in table.indexes} <= indexes, table.name
        assert migrate.current_revision(store.engine) == migrate.head_revision()
    finally:
        store.close()


def test_migrations_downgrade_and_upgrade_again(tmp_path: Path) -> None:
    store = open_store(f"sqlite+pysqlite:///{tmp_path / 'm.db'}")
    try:
        migrate.downgrade(store.engine, "base")
        assert "papers" not in inspect(store.engine).get_table_names()
        migrate.upgrade(store.engine)
        assert "papers" in inspect(store.engine).get_table_names()
    finally:
        store.close()


def test_reader_sees_committed_data_while_a_writer_holds_a_transaction(tmp_path: Path) -> None:
    url = f"sqlite+pysqlite:///{tmp_path / 'c.db'}"
    writer = open_store(url)
    reader = open_store(url)
    try:
        writer.apply_batch(Batch(papers=[p("2503.00001")]))
        with writer.engine.begin() as conn:
            conn.execute(text("UPDATE papers SET title = 'uncommitted' WHERE id = '2503.00001'"))
            seen = reader.get_paper("2503.00001")
            assert seen is not None
            assert seen.title == "Title 2503.00001"
    finally:
        writer.close()
        reader.close()
