"""``paper_sentences`` on SQLite and PostgreSQL: the packed rows, the backlog join, current rows only."""

from __future__ import annotations

import numpy as np
import pytest

from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.sentences import SqlSentenceStore
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper, content_hash
from paperfeed.domain.sentences import PaperSentences, Sentence


def _paper(pid: str, abstract: str, version: int = 1) -> Paper:
    return Paper(id=pid, title=f"Title {pid}", abstract=abstract, authors=("A B",), version=version)


def _row(paper: Paper, model: str = "m1", roles: str = "r1", n: int = 2) -> PaperSentences:
    rng = np.random.default_rng(len(paper.id))
    vectors = rng.normal(size=(n, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    sentences = tuple(
        Sentence(i * 10, i * 10 + 9, "method" if i else "background", (0.7, 0.1, 0.1, 0.05, 0.05))
        for i in range(n)
    )
    return PaperSentences(
        paper.id, content_hash(paper.title, paper.abstract), model, roles, sentences, vectors
    )


def test_rows_round_trip_and_the_backlog_is_a_join(store: SqlPaperStore) -> None:
    papers = [_paper(f"2501.0000{i}", f"Abstract number {i}. It has two sentences.") for i in range(1, 5)]
    store.apply_batch(Batch(papers=papers))
    sentences = SqlSentenceStore(store.engine)
    assert sentences.count_backlog("m1", "r1") == 4
    assert [p.paper_id for p in sentences.backlog("m1", "r1", limit=2)] == ["2501.00001", "2501.00002"]
    assert [p.paper_id for p in sentences.backlog("m1", "r1", after="2501.00002")] == [
        "2501.00003",
        "2501.00004",
    ]

    rows = [_row(papers[0]), _row(papers[1], n=0), _row(papers[2], model="m0")]
    sentences.save(rows)
    assert sentences.count_backlog("m1", "r1") == 2  # papers[2] has another model's, papers[3] none
    assert sentences.count_backlog("m1", "r2") == 4  # another role model: every row is stale
    assert sentences.count_done("m1") == 2

    found = sentences.sentences([papers[0].id, papers[1].id, papers[2].id, "nope"], "m1")
    assert set(found) == {papers[0].id, papers[1].id}
    first = found[papers[0].id]
    assert first.sentences[0].role == "background"
    assert first.sentences[1].role == "background"
    assert first.sentences[1].start == 10
    assert first.sentences[1].end == 19
    assert first.vectors is not None
    assert rows[0].vectors is not None
    assert np.abs(first.vectors - rows[0].vectors).max() < 1e-3  # float16 on disk
    assert found[papers[1].id].sentences == ()
    assert sentences.sentences([papers[0].id], "m1", vectors=False)[papers[0].id].vectors is None


def test_a_changed_abstract_makes_its_row_stale_and_unread(store: SqlPaperStore) -> None:
    paper = _paper("2501.00001", "The first text. Two sentences.")
    store.apply_batch(Batch(papers=[paper]))
    sentences = SqlSentenceStore(store.engine)
    sentences.save([_row(paper)])
    assert sentences.count_backlog("m1", "r1") == 0
    store.apply_batch(Batch(papers=[_paper("2501.00001", "A new text entirely. Still two.", version=2)]))
    assert sentences.count_backlog("m1", "r1") == 1
    assert sentences.sentences([paper.id], "m1") == {}
    assert sentences.count_done("m1") == 0


def test_saving_again_replaces_the_row(store: SqlPaperStore) -> None:
    paper = _paper("2501.00001", "One. Two. Three.")
    store.apply_batch(Batch(papers=[paper]))
    sentences = SqlSentenceStore(store.engine)
    sentences.save([_row(paper, n=2)])
    sentences.save([_row(paper, n=3, roles="r2")])
    found = sentences.sentences([paper.id], "m1")[paper.id]
    assert len(found.sentences) == 3
    assert found.role_model == "r2"


def test_a_row_without_vectors_is_refused(store: SqlPaperStore) -> None:
    paper = _paper("2501.00001", "One.")
    store.apply_batch(Batch(papers=[paper]))
    row = PaperSentences(paper.id, "h", "m1", "r1", (Sentence(0, 4, "other", (0, 0, 0, 0, 1)),), None)
    with pytest.raises(ValueError, match="no vectors"):
        SqlSentenceStore(store.engine).save([row])
