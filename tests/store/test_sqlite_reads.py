"""The stdlib SQLite reader answers exactly as the SQL store does, and refuses what it cannot vouch for."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import insert, text

from paperfeed.adapters.sqlite_reads import open_sqlite_reads, sqlite_path
from paperfeed.adapters.store import SqlPaperStore, migrate, open_store
from paperfeed.adapters.store.schema import embeddings
from paperfeed.adapters.store.topics import SqlTopicRecords
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Listing, Paper
from paperfeed.domain.ports import DerivedStats
from paperfeed.domain.topics import Topic, TopicAssignment, TopicGeneration
from tests.support.papers import paper as make_paper

T = datetime(2025, 3, 1, 12, 30, 15, 123456, tzinfo=UTC)


def _full(pid: str, **kw: Any) -> Paper:
    fields: dict[str, Any] = {
        "title": "A title, with “quotes”",
        "abstract": "Abstract ∑ text",
        "authors": ("Ada Lovelace", "Émile Borel"),
        "categories": ("cs.CL", "cs.LG"),
        "version": 3,
        "published": T,
        "updated": T + timedelta(days=2),
        "comment": "10 pages",
        "journal_ref": "J. X 1 (2025)",
        "doi": "10.1/x",
        "license": "cc-by",
        "github_repo": "https://github.com/a/b",
        "github_stars": 7,
        "project_page": "https://p.example",
        "upvotes": 12,
        "num_comments": 2,
        "organization": "Org",
        "ai_summary": "Summary",
        "ai_keywords": ("k1", "k2"),
        "sources": {"hf-daily": "2025-03-02T00:00:00Z", "file:x": "2025-03-01T00:00:00Z"},
    }
    fields.update(kw)
    return make_paper(pid, **fields)


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite+pysqlite:///{tmp_path / 'paperfeed.db'}"


@pytest.fixture
def store(url: str) -> SqlPaperStore:
    s = open_store(url)
    s.apply_batch(
        Batch(
            papers=[
                _full("2503.00001"),
                _full("2503.00002", published=None, updated=None, sources={"a": "1"}),
            ]
            + [Paper(id=f"2503.{i:05d}", title=f"T{i}", sources={"b": "2"}) for i in range(3, 1203)],
            listings=[Listing(date(2025, 3, 1), "2503.00001", "hf-daily", 5, 1)],
        )
    )
    return s


def _embed_and_build_topics(store: SqlPaperStore) -> None:
    """Vectors of two models and a topics build of one topic, written by the real SQL adapters."""
    vector = np.full(4, 0.5, dtype=np.float32)
    with store.engine.begin() as conn:
        for pid, model in (("2503.00001", "model-a"), ("2503.00003", "model-a"), ("2503.00004", "model-b")):
            conn.execute(
                insert(embeddings).values(
                    paper_id=pid, model_id=model, content_hash="h", vector=vector.tobytes(), created_at=T
                )
            )
    SqlTopicRecords(store.engine).replace(
        TopicGeneration(
            model_id="model-a",
            method="kmeans k=1 seed=0",
            built_at=T,
            topics=[Topic(1, "one", ("w",), 2, ())],
            centroids={1: vector},
            assignments=[TopicAssignment("2503.00001", 1, 1.0), TopicAssignment("2503.00003", 1, 1.0)],
            lineage=[],
            weeks={},
            next_id=2,
        )
    )


def test_the_reader_returns_what_the_store_returns(store: SqlPaperStore, url: str) -> None:
    reads = open_sqlite_reads(url)
    assert reads is not None
    try:
        ids = ["2503.00001", "2503.00002", "missing", *(f"2503.{i:05d}" for i in range(3, 1203))]
        assert reads.get_papers(ids) == store.get_papers(ids)  # > 900 ids: chunked alike
        assert reads.get_paper("2503.00001") == store.get_paper("2503.00001") == _full("2503.00001")
        assert reads.get_paper("missing") is None
        assert reads.stats() == store.stats()
        assert reads.derived_stats() == store.derived_stats() == DerivedStats(vectors={}, topics=None)
        _embed_and_build_topics(store)
        derived = reads.derived_stats()
        assert derived == store.derived_stats()
        assert derived.vectors == {"model-a": 2, "model-b": 1}
        assert derived.topics is not None
        assert (derived.topics.built_at, derived.topics.topics, derived.topics.coarse) == (T, 1, 0)
        assert reads.hidden_paper_ids() == store.hidden_paper_ids() == frozenset()
        with store.engine.begin() as conn:
            conn.execute(
                text("INSERT INTO hidden_papers (paper_id, hidden_at) VALUES ('2503.00002', :t)"), {"t": T}
            )
        assert reads.hidden_paper_ids() == store.hidden_paper_ids() == frozenset({"2503.00002"})
        newest = store.get_papers(["2503.00001"])
        assert newest
        for moment in (datetime.now(UTC) - timedelta(hours=1), datetime.now(UTC) + timedelta(hours=1)):
            assert reads.changed_after(moment) == store.changed_after(moment)
        assert reads.changed_after(datetime.now(UTC) - timedelta(hours=1))
    finally:
        reads.close()
        store.close()


def test_the_reader_sees_what_is_committed_after_it_opened(store: SqlPaperStore, url: str) -> None:
    reads = open_sqlite_reads(url)
    assert reads is not None
    try:
        mark = datetime.now(UTC)
        assert not reads.changed_after(mark)
        store.apply_batch(Batch(papers=[Paper(id="2504.00001", title="New", sources={"c": "3"})]))
        assert reads.changed_after(mark)
        assert reads.stats() == store.stats()
        assert reads.stats().by_source["c"] == 1
    finally:
        reads.close()
        store.close()


def test_the_reader_only_reads(store: SqlPaperStore, url: str) -> None:
    import sqlite3

    reads = open_sqlite_reads(url)
    assert reads is not None
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            reads._conn.execute("DELETE FROM papers")
    finally:
        reads.close()
        store.close()


def test_what_the_reader_refuses(tmp_path: Path, url: str) -> None:
    assert open_sqlite_reads(url) is None  # no file yet: the SQL store creates it
    assert not Path(sqlite_path(url) or "").exists()  # and asking did not create it
    store = open_store(url)
    migrate.downgrade(store.engine, "0012_topic_levels_picks")
    assert open_sqlite_reads(url) is None  # an older schema: the SQL store migrates it
    migrate.upgrade(store.engine)
    reads = open_sqlite_reads(url)
    assert reads is not None
    reads.close()
    store.close()
    for other in ("postgresql://u@h/db", "sqlite://", f"{url}?mode=ro", "sqlite:////tmp/a%20b.db"):
        assert open_sqlite_reads(other) is None, other


def test_the_reader_shows_papers_as_the_feed_queries_do(store: SqlPaperStore, url: str) -> None:
    """The one visible-papers lookup reads the same on both: hidden papers left out, this instance's
    votes and comments added to the imported counts, leaving out a hidden reader's and a hidden comment
    (``paperfeed search`` shows what the search page shows)."""
    from paperfeed.adapters.store.accounts import SqlAccountStore
    from paperfeed.adapters.store.community import SqlCommunityStore
    from paperfeed.adapters.store.feed_queries import SqlFeedQueries

    accounts, community = SqlAccountStore(store.engine), SqlCommunityStore(store.engine)
    ada = accounts.create_user("ada@example.org", None, "Ada", T)
    bob = accounts.create_user("bob@example.org", None, "Bob", T)
    assert ada is not None
    assert bob is not None
    for user in (ada, bob):
        community.add_vote(user.id, "2503.00001", T)
        community.add_comment(user.id, "2503.00001", "Nice.", T, per_hour=10)
    hidden = community.add_comment(ada.id, "2503.00003", "Spam.", T, per_hour=10)
    community.set_comment_hidden(hidden.id, None, T)
    accounts.set_hidden(bob.id, T)
    accounts.hide_paper("2503.00002", None, "spam", T)
    reads = open_sqlite_reads(url)
    assert reads is not None
    try:
        ids = [
            "2503.00001",
            "2503.00002",
            "2503.00003",
            "missing",
            *(f"2503.{i:05d}" for i in range(4, 1203)),
        ]
        shown = reads.visible_papers(ids)
        assert shown == SqlFeedQueries(store.engine).visible_papers(ids)  # > 900 ids: chunked alike
        assert "2503.00002" not in shown
        assert "missing" not in shown
        assert (shown["2503.00001"].upvotes, shown["2503.00001"].num_comments) == (12 + 1, 2 + 1)
        assert (shown["2503.00003"].upvotes, shown["2503.00003"].num_comments) == (None, None)
        assert reads.count_papers() == store.count_papers() == 1202
    finally:
        reads.close()
        store.close()
