"""The sentence indexer (the indexer's second pass): committed batches, resumable, redone when a text,
the embedding model or the role model changes; papers without an abstract leave the backlog too."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from paperfeed.adapters.embed.fake import FakeEmbedder
from paperfeed.adapters.sentences.splitter import SentencexSplitter
from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.sentences import SqlSentenceStore
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.sentences import SENTENCE_VECTORS, PaperSentences, sentence_model_id
from paperfeed.services.sentences import SentenceIndexer
from tests.facets.support import PAPERS, PositionalRoles

SPACE = sentence_model_id(FakeEmbedder().model_id)  # what the rows record: the model and the pooling


def _indexer(
    store: SqlPaperStore, embedder: FakeEmbedder, roles: PositionalRoles, size: int = 2
) -> SentenceIndexer:
    return SentenceIndexer(
        SqlSentenceStore(store.engine), embedder, SentencexSplitter(), roles, batch_size=size
    )


def test_batches_commit_and_a_second_run_resumes(store: SqlPaperStore) -> None:
    store.apply_batch(Batch(papers=PAPERS))
    roles = PositionalRoles()
    indexer = _indexer(store, FakeEmbedder(), roles)
    assert indexer.plan().backlog == len(PAPERS)
    first = indexer.run(limit=3)
    assert first.trained
    assert roles.trained == 1
    assert (first.papers, first.remaining) == (3, len(PAPERS) - 3)
    assert indexer.plan().papers == 3
    rest = indexer.run()
    assert not rest.trained
    assert rest.papers == len(PAPERS) - 3
    assert rest.remaining == 0
    assert indexer.plan().backlog == 0
    assert indexer.run().papers == 0
    rows = SqlSentenceStore(store.engine).sentences([p.id for p in PAPERS], SPACE)
    me = rows[PAPERS[0].id]
    assert [s.role for s in me.sentences] == ["background", "method", "result"]
    assert [s.text(PAPERS[0].abstract) for s in me.sentences][1:] == [
        "We use graph neural networks.",
        "Accuracy improves by twelve percent.",
    ]
    assert me.vectors is not None
    expected = FakeEmbedder().embed(["We use graph neural networks."])[0]
    np.testing.assert_allclose(me.vectors[1], expected, atol=1e-3)


def test_stop_is_asked_between_batches(store: SqlPaperStore) -> None:
    store.apply_batch(Batch(papers=PAPERS))
    asked: list[int] = []

    def stop() -> bool:  # no at the first question, yes from the second on
        asked.append(1)
        return len(asked) > 1

    roles = PositionalRoles()
    roles.trained = 1  # a role model at hand: no training, before which the stop would be asked too
    summary = _indexer(store, FakeEmbedder(), roles, size=2).run(stop=stop)
    assert summary.stopped
    assert summary.papers == 2


def test_a_paper_without_an_abstract_gets_an_empty_row(store: SqlPaperStore) -> None:
    store.apply_batch(Batch(papers=[Paper(id="2501.00011", title="Only a title", abstract="")]))
    indexer = _indexer(store, FakeEmbedder(), PositionalRoles())
    assert indexer.run().papers == 1
    assert indexer.plan().backlog == 0
    found = SqlSentenceStore(store.engine).sentences(["2501.00011"], SPACE)
    assert found["2501.00011"].sentences == ()


def test_another_embedding_model_redoes_every_paper(store: SqlPaperStore) -> None:
    store.apply_batch(Batch(papers=PAPERS))
    roles = PositionalRoles()
    _indexer(store, FakeEmbedder(), roles).run()
    other = _indexer(store, FakeEmbedder(name="other"), roles)
    assert other.plan().backlog == len(PAPERS)
    assert other.run().papers == len(PAPERS)
    stored = SqlSentenceStore(store.engine)
    assert stored.count_done(sentence_model_id(FakeEmbedder(name="other").model_id)) == len(PAPERS)
    assert stored.count_done(SPACE) == 0


def test_a_changed_abstract_is_redone(store: SqlPaperStore) -> None:
    store.apply_batch(Batch(papers=PAPERS))
    indexer = _indexer(store, FakeEmbedder(), PositionalRoles())
    indexer.run()
    changed = Paper(id=PAPERS[0].id, title=PAPERS[0].title, abstract="One new sentence only.", version=2)
    store.apply_batch(Batch(papers=[changed]))
    assert indexer.plan().backlog == 1
    indexer.run()
    row = SqlSentenceStore(store.engine).sentences([changed.id], SPACE)[changed.id]
    assert [s.text(changed.abstract) for s in row.sentences] == ["One new sentence only."]


def test_sentences_made_another_way_are_redone(store: SqlPaperStore) -> None:
    """Rows stored under the plain model id (sentences embedded one by one, before late chunking) are not
    read and are redone: the id records how the sentence vectors were made."""
    store.apply_batch(Batch(papers=PAPERS))
    roles = PositionalRoles()
    indexer = _indexer(store, FakeEmbedder(), roles)
    sentences = SqlSentenceStore(store.engine)
    made = indexer.sentences_of(sentences.backlog(SPACE, "", limit=100), roles.train(FakeEmbedder()))
    plain = FakeEmbedder().model_id
    sentences.save(
        [
            PaperSentences(r.paper_id, r.content_hash, plain, r.role_model, r.sentences, r.vectors)
            for r in made
        ]
    )
    assert sentences.count_done(plain) == len(PAPERS)
    assert indexer.model_id == SPACE == f"{FakeEmbedder().model_id}+{SENTENCE_VECTORS}"
    assert indexer.plan().backlog == len(PAPERS)  # none is current for the late-chunked space
    assert sentences.sentences([PAPERS[0].id], SPACE) == {}
    assert indexer.run().papers == len(PAPERS)
    assert sentences.count_done(SPACE) == len(PAPERS)


def test_batch_size_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        SentenceIndexer(None, FakeEmbedder(), SentencexSplitter(), PositionalRoles(), batch_size=0)  # type: ignore[arg-type]
