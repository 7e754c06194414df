"""The backlog and vector storage on a real SQLite store: new, changed, unchanged, model change."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy.exc import IntegrityError

from paperfeed.adapters.embed.fake import FakeEmbedder
from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.embeddings import SqlEmbeddingStore, decode_vector, encode_vector
from paperfeed.domain.embedding import PendingPaper, embedding_text

from .conftest import add_papers, paper

MODEL = "fake-hash64"


def _embed_all(emb: SqlEmbeddingStore, name: str = "fake") -> list[PendingPaper]:
    embedder = FakeEmbedder(64, name=name)
    pending = emb.backlog(embedder.model_id, limit=10_000)
    emb.save_vectors(embedder.model_id, pending, embedder.embed([p.text for p in pending]))
    return pending


@pytest.fixture
def emb(store: SqlPaperStore) -> SqlEmbeddingStore:
    return SqlEmbeddingStore(store.engine)


def test_new_papers_are_the_backlog_until_embedded(store: SqlPaperStore, emb: SqlEmbeddingStore) -> None:
    add_papers(store, [paper(i) for i in range(5)])
    pending = emb.backlog(MODEL)
    assert [p.paper_id for p in pending] == [f"2501.{i:05d}" for i in range(5)]
    assert not any(p.has_vector for p in pending)
    assert pending[0].text == embedding_text(pending[0].title, pending[0].abstract)
    assert pending[0].text.startswith("Paper 0 on graph neural networks for molecules. We study")
    assert emb.count_backlog(MODEL) == 5
    _embed_all(emb)
    assert emb.count_backlog(MODEL) == 0
    assert emb.backlog(MODEL) == []
    assert emb.model_counts() == {MODEL: 5}


def test_changed_text_is_re_embedded_unchanged_is_not(store: SqlPaperStore, emb: SqlEmbeddingStore) -> None:
    add_papers(store, [paper(i) for i in range(4)])
    _embed_all(emb)
    add_papers(
        store,
        [
            paper(0),
            paper(1, abstract="A rewritten abstract.", version=2),
            paper(2, repo="https://github.com/a/b"),
        ],
    )
    pending = emb.backlog(MODEL)
    assert [(p.paper_id, p.has_vector) for p in pending] == [
        ("2501.00001", True)
    ]  # a new repo is not new text
    assert pending[0].abstract == "A rewritten abstract."


def test_a_model_change_makes_every_paper_stale(store: SqlPaperStore, emb: SqlEmbeddingStore) -> None:
    add_papers(store, [paper(i) for i in range(3)])
    _embed_all(emb)
    assert emb.count_backlog("other-hash64") == 3
    assert all(p.has_vector for p in emb.backlog("other-hash64"))
    assert len(_embed_all(emb, "other")) == 3
    assert emb.model_counts() == {"other-hash64": 3}  # replaced, one vector per paper, never two models
    assert emb.vectors(MODEL, ["2501.00000"]) == {}


def test_keyset_paging_and_limit(store: SqlPaperStore, emb: SqlEmbeddingStore) -> None:
    add_papers(store, [paper(i) for i in range(10)])
    first = emb.backlog(MODEL, limit=4)
    second = emb.backlog(MODEL, after=first[-1].paper_id, limit=4)
    assert [p.paper_id for p in first + second] == [f"2501.{i:05d}" for i in range(8)]


def test_one_batch_is_one_transaction(store: SqlPaperStore, emb: SqlEmbeddingStore) -> None:
    add_papers(store, [paper(0)])
    good = emb.backlog(MODEL)[0]
    ghost = PendingPaper("9999.99999", "no such paper", "", "0" * 32, has_vector=False)
    with pytest.raises(IntegrityError):  # the foreign key refuses the ghost ...
        emb.save_vectors(MODEL, [good, ghost], np.full((2, 64), 1 / 8, np.float32))
    assert emb.model_counts() == {}  # ... and the good row went down with it


def test_records_carry_the_facets_filters_need(store: SqlPaperStore, emb: SqlEmbeddingStore) -> None:
    add_papers(store, [paper(1, repo="https://github.com/x/y"), paper(2)])
    pending = _embed_all(emb)
    pages = list(emb.records(MODEL, page=1))
    assert [len(p) for p in pages] == [1, 1]
    one, two = pages[0][0], pages[1][0]
    assert (one.paper_id, one.published, one.categories, one.has_code) == (
        "2501.00001",
        date(2025, 1, 2),
        ("cs.LG", "stat.ML"),
        True,
    )
    assert (two.categories, two.has_code) == (("astro-ph.CO",), False)
    expected = FakeEmbedder(64).embed([pending[0].text])[0]
    assert np.array_equal(one.vector, expected)
    assert np.array_equal(emb.vectors(MODEL, ["2501.00001", "nope"])["2501.00001"], expected)


def test_records_window_by_time(store: SqlPaperStore, emb: SqlEmbeddingStore) -> None:
    add_papers(store, [paper(i) for i in range(3)])
    _embed_all(emb)
    newest = emb.newest(MODEL)
    assert newest is not None
    assert newest.tzinfo is not None
    assert sum(len(p) for p in emb.records(MODEL, since=newest, until=newest)) == 3
    assert list(emb.records(MODEL, since=newest + timedelta(seconds=1))) == []
    assert list(emb.records("other")) == []
    assert emb.newest("other") is None


def test_delete_and_cleanup(store: SqlPaperStore, emb: SqlEmbeddingStore) -> None:
    add_papers(store, [paper(i) for i in range(4)])
    _embed_all(emb)
    emb.set_mark("vector-index:x", datetime(2026, 1, 1, tzinfo=UTC))
    assert emb.delete(["2501.00000", "missing"]) == 1
    assert emb.count_backlog(MODEL) == 1
    other = emb.backlog("other-hash64", after="2501.00000", limit=1)
    emb.save_vectors("other-hash64", other, FakeEmbedder(64, name="other").embed([other[0].text]))
    assert emb.delete_other_models(MODEL) == 1
    assert emb.model_counts() == {MODEL: 2}
    assert emb.delete_all() == 2
    assert emb.get_mark("vector-index:x") is None
    assert emb.count_backlog(MODEL) == emb.count_papers() == 4


def test_marks_round_trip(emb: SqlEmbeddingStore) -> None:
    when = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
    assert emb.get_mark("m") is None
    emb.set_mark("m", when)
    assert emb.get_mark("m") == when
    emb.set_mark("m", None)
    assert emb.get_mark("m") is None


def test_vector_bytes_are_little_endian_float32() -> None:
    v = np.array([1.0, -0.5, 0.25], dtype=np.float64)
    blob = encode_vector(v)
    assert blob == np.array([1.0, -0.5, 0.25], dtype="<f4").tobytes()
    assert decode_vector(blob).dtype == np.float32
    assert np.array_equal(decode_vector(blob), v.astype(np.float32))


def test_the_newest_indexer_report_is_kept_and_read_back(
    store: SqlPaperStore, emb: SqlEmbeddingStore
) -> None:
    """/admin/jobs reads what the indexer last said (#30 item 11): one row, replaced by each report, a
    damaged value reads as no report, and the data version's derived part does not move with it."""
    from sqlalchemy import update

    from paperfeed.adapters.store.feed_queries import SqlFeedQueries
    from paperfeed.adapters.store.schema import checkpoints
    from paperfeed.domain.indexing_status import IndexerReport

    assert emb.indexer_report() is None
    version = SqlFeedQueries(store.engine).data_version()
    at = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    emb.report_indexer(IndexerReport("host:1:2", "embedding", 40, 80, 12.5, at))
    emb.report_indexer(IndexerReport("host:1:2", "idle", 120, 0, 13.0, at))
    assert emb.indexer_report() == IndexerReport("host:1:2", "idle", 120, 0, 13.0, at)
    assert SqlFeedQueries(store.engine).data_version().derived == version.derived  # a report is no sync
    with store.engine.begin() as conn:
        conn.execute(
            update(checkpoints).where(checkpoints.c.name == "indexer-report").values(value="{not json")
        )
    assert emb.indexer_report() is None
