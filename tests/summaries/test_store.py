"""Extracted one-line summaries in the store, on real SQLite and PostgreSQL: chosen by the indexer's sentence
pass, read with every paper, never written or erased by ingest, hidden when the abstract changes until
chosen again, filled from stored sentences without embedding, and Hugging Face's own summary kept."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest
from sqlalchemy import update

from paperfeed.adapters.embed.fake import FakeEmbedder
from paperfeed.adapters.sentences.splitter import SentencexSplitter
from paperfeed.adapters.sqlite_reads import open_sqlite_reads
from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.schema import papers
from paperfeed.adapters.store.sentences import SqlSentenceStore
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.summaries import SummaryRule
from paperfeed.services.sentences import SentenceIndexer
from tests.facets.support import PositionalRoles

# PositionalRoles: first sentence background, second method, third and later result
RESULT_RULE = SummaryRule(result=1.0)
METHOD_RULE = SummaryRule(method=1.0)

PAPERS = [
    Paper(
        id="2502.00001",
        title="Pruning attention heads",
        abstract="Transformers spend most of their time in attention layers. "
        "We prune the heads whose outputs barely change the loss. "
        "Latency halves while accuracy stays within one point.",
    ),
    Paper(
        id="2502.00002",
        title="Cheaper retrieval",
        abstract="Dense retrieval needs large indexes that cost memory. "
        "We quantise the vectors to four bits with a learned codebook. "
        "Memory falls eightfold with the same recall at ten.",
        ai_summary="A learned four-bit codebook shrinks dense retrieval indexes eightfold.",
    ),
    Paper(id="2502.00003", title="Only a title", abstract=""),
]


def _line(store: SqlPaperStore, paper_id: str) -> str | None:
    """The paper's extracted line as the store's normal read gives it."""
    paper = store.get_paper(paper_id)
    assert paper is not None
    return paper.extracted_summary


def _indexer(
    store: SqlPaperStore, rule: SummaryRule = RESULT_RULE, embedder: FakeEmbedder | None = None
) -> SentenceIndexer:
    return SentenceIndexer(
        SqlSentenceStore(store.engine),
        embedder or FakeEmbedder(),
        SentencexSplitter(),
        PositionalRoles(),
        batch_size=2,
        rule=rule,
    )


def test_the_sentence_pass_stores_the_line_and_every_read_carries_it(store: SqlPaperStore) -> None:
    store.apply_batch(Batch(papers=PAPERS))
    assert _line(store, "2502.00001") is None
    indexer = _indexer(store)
    assert indexer.run().papers == 3
    found = store.get_papers([p.id for p in PAPERS])
    assert found["2502.00001"].extracted_summary == "Latency halves while accuracy stays within one point."
    assert found["2502.00002"].extracted_summary == "Memory falls eightfold with the same recall at ten."
    assert found["2502.00003"].extracted_summary is None  # no abstract, no sentence
    listed = {p.id: p for page in store.iter_papers() for p in page}
    assert listed["2502.00001"].extracted_summary == found["2502.00001"].extracted_summary
    line = found["2502.00001"].one_line
    assert line is not None
    assert line.source == "extracted"
    assert indexer.plan().summaries == 0


def test_hugging_faces_summary_is_kept_and_shown(store: SqlPaperStore) -> None:
    store.apply_batch(Batch(papers=PAPERS))
    _indexer(store).run()
    paper = store.get_paper("2502.00002")
    assert paper is not None
    assert paper.ai_summary == "A learned four-bit codebook shrinks dense retrieval indexes eightfold."
    line = paper.one_line
    assert line is not None
    assert (line.source, line.text) == ("hugging_face", paper.ai_summary)
    # a later observation without HF's summary (an arXiv listing) keeps both
    store.apply_batch(
        Batch(
            papers=[Paper(id="2502.00002", title="Cheaper retrieval", abstract=PAPERS[1].abstract, upvotes=9)]
        )
    )
    again = store.get_paper("2502.00002")
    assert again is not None
    assert again.ai_summary == paper.ai_summary
    assert again.extracted_summary == paper.extracted_summary
    assert again.one_line == line


def test_ingest_never_erases_the_line(store: SqlPaperStore) -> None:
    store.apply_batch(Batch(papers=PAPERS))
    _indexer(store).run()
    result = store.apply_batch(
        Batch(
            papers=[
                Paper(
                    id="2502.00001", title="Pruning attention heads", upvotes=12, abstract=PAPERS[0].abstract
                )
            ]
        )
    )
    assert result.updated == 1
    paper = store.get_paper("2502.00001")
    assert paper is not None
    assert paper.upvotes == 12
    assert paper.extracted_summary == "Latency halves while accuracy stays within one point."


def test_a_changed_abstract_hides_the_old_line_until_it_is_chosen_again(store: SqlPaperStore) -> None:
    store.apply_batch(Batch(papers=PAPERS))
    indexer = _indexer(store)
    indexer.run()
    changed = (
        "Transformers spend most of their time in attention layers. We prune heads. "
        "Latency falls by a third on every benchmark we tried."
    )
    store.apply_batch(
        Batch(papers=[Paper(id="2502.00001", title="Pruning attention heads", abstract=changed, version=2)])
    )
    assert _line(store, "2502.00001") is None
    assert indexer.plan().backlog == 1
    indexer.run()
    assert _line(store, "2502.00001") == "Latency falls by a third on every benchmark we tried."


class _NoEmbedding(FakeEmbedder):
    """The fake embedder's model id, but embedding is an error: the summaries must come from storage."""

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        raise AssertionError(f"embedded {len(texts)} texts")


def test_lines_are_filled_from_stored_sentences_without_embedding(store: SqlPaperStore) -> None:
    store.apply_batch(Batch(papers=PAPERS))
    roles = PositionalRoles()
    first = SentenceIndexer(
        SqlSentenceStore(store.engine),
        FakeEmbedder(),
        SentencexSplitter(),
        roles,
        batch_size=2,
        rule=RESULT_RULE,
    )
    first.run()
    with store.engine.begin() as conn:  # sentences stored before the summaries existed (migration 0018)
        conn.execute(update(papers).values(summary_line=None, summary_key=None))
    assert _line(store, "2502.00001") is None
    indexer = SentenceIndexer(
        SqlSentenceStore(store.engine),
        _NoEmbedding(),
        SentencexSplitter(),
        roles,
        batch_size=2,
        rule=RESULT_RULE,
    )
    plan = indexer.plan()
    assert (plan.backlog, plan.summaries, plan.pending) == (0, 3, True)
    assert "choosing the one-line summary of 3" in plan.message()
    done = indexer.run()
    assert (done.summaries, done.papers) == (3, 0)
    assert _line(store, "2502.00001") == "Latency halves while accuracy stays within one point."
    assert not indexer.plan().pending
    # a changed rule chooses again, still without embedding
    other = SentenceIndexer(
        SqlSentenceStore(store.engine),
        _NoEmbedding(),
        SentencexSplitter(),
        roles,
        batch_size=2,
        rule=METHOD_RULE,
    )
    assert other.plan().summaries == 3
    assert other.run(limit=2).summaries == 2  # a limit holds for the fill too
    other.run()
    assert _line(store, "2502.00001") == "We prune the heads whose outputs barely change the loss."


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_the_plain_sqlite_reader_carries_the_line(store: SqlPaperStore, db_url: str) -> None:
    store.apply_batch(Batch(papers=PAPERS))
    _indexer(store).run()
    reads = open_sqlite_reads(db_url)
    assert reads is not None
    try:
        paper = reads.get_paper("2502.00001")
        assert paper is not None
        assert paper.extracted_summary == "Latency halves while accuracy stays within one point."
        assert paper == store.get_paper("2502.00001")
    finally:
        reads.close()
