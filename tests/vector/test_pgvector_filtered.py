"""pgvector with filters: a selective filter is answered exactly, a broad one by an over-fetching walk.

The expected answers are brute force over the vectors as pgvector stores them (``halfvec``: float16), so
"exact" means the very scores of the true top k (to float16 rounding: ids may only trade places within a tie).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from paperfeed.adapters.store.sql_store import make_engine
from paperfeed.adapters.vector.pgvector_index import PgVectorIndex
from paperfeed.domain.search import SearchFilters
from tests.vector.corpus import DIM, MODEL, Corpus, make_corpus, passes

pytestmark = pytest.mark.postgres

SELECTIVE = SearchFilters(categories=("cs.LG",))  # ~25%: ~2,500 of 10,000
BROAD = SearchFilters(has_code=False)  # ~70%


def as_stored(corpus: Corpus) -> Corpus:
    return Corpus(corpus.records, corpus.vectors.astype(np.float16).astype(np.float32))


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return make_corpus(10_000, seed=11)


@pytest.fixture
def index(pg_url: str, corpus: Corpus) -> Iterator[PgVectorIndex]:
    engine = make_engine(pg_url)
    built = PgVectorIndex(engine, model_id=MODEL, dimension=DIM)
    built.upsert(corpus.records)
    built.save()
    try:
        yield built
    finally:
        built.close()
        engine.dispose()


def queries(corpus: Corpus, count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(8)
    picks = corpus.vectors[rng.choice(len(corpus.vectors), size=count, replace=False)]
    noisy = picks + 0.4 * rng.standard_normal(picks.shape).astype(np.float32) / np.sqrt(DIM)
    return [q.astype(np.float16).astype(np.float32) for q in noisy]  # as the query reaches pgvector


def test_a_selective_filter_is_answered_exactly(index: PgVectorIndex, corpus: Corpus) -> None:
    keep = passes(SELECTIVE)
    allowed = sum(keep(r) for r in corpus.records)
    assert 2000 < allowed <= index.brute_force_rows  # more than the old 2,000-row limit scored exactly
    stored = as_stored(corpus)
    for q in queries(corpus, 20):
        for k in (10, 100):
            hits = index.search(q, k, SELECTIVE)
            want = stored.expected(q, k, keep)
            assert [h.paper_id for h in hits][:5] == want[:5]
            exact = [float(stored.vectors[int(pid.split(".")[1])] @ (q / np.linalg.norm(q))) for pid in want]
            assert [h.score for h in hits] == pytest.approx(exact, abs=3e-4)


def test_a_broad_filter_walks_the_graph_and_keeps_the_best_k(index: PgVectorIndex, corpus: Corpus) -> None:
    keep = passes(BROAD)
    assert sum(keep(r) for r in corpus.records) > index.brute_force_rows
    stored = as_stored(corpus)
    found = total = 0
    for q in queries(corpus, 20):
        hits = index.search(q, 10, BROAD)
        want = stored.expected(q, 10, keep)
        assert len(hits) == 10
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert all(keep(corpus.records[int(h.paper_id.split(".")[1])]) for h in hits)
        found += len({h.paper_id for h in hits} & set(want))
        total += len(want)
    assert found / total >= 0.97
