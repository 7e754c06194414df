"""The VectorIndex contract, held against exact and HNSW alike (see conftest's VARIANTS)."""

from __future__ import annotations

import dataclasses
from datetime import date

import numpy as np
import pytest

from paperfeed.adapters.vector import StoredVectorIndex
from paperfeed.domain.search import SearchFilters, VectorIndex, VectorRecord
from tests.vector.conftest import Opener
from tests.vector.corpus import COMMON, DIM, RARE, Corpus, make_corpus, passes


def queries(corpus: Corpus, count: int, seed: int = 5) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    picks = corpus.vectors[rng.choice(len(corpus.vectors), size=count, replace=False)]
    noisy = picks + 0.4 * rng.standard_normal(picks.shape).astype(np.float32) / np.sqrt(DIM)
    return list(noisy.astype(np.float32))


def ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.paper_id for h in hits]


def test_implements_the_port(filled: StoredVectorIndex) -> None:
    index: VectorIndex = filled  # a type error here if the class drifts from the Protocol
    assert len(index) == 3000


def test_top1_of_a_stored_vector_is_itself(filled: StoredVectorIndex, corpus: Corpus) -> None:
    for i in range(0, 3000, 15):
        hits = filled.search(corpus.vectors[i], 1)
        assert ids(hits) == [corpus.ids[i]]
        assert hits[0].score == pytest.approx(1.0, abs=2e-3)


def test_results_are_sorted_cosines_matching_brute_force(filled: StoredVectorIndex, corpus: Corpus) -> None:
    found = 0
    for q in queries(corpus, 40):
        hits = filled.search(q, 10)
        scores = [h.score for h in hits]
        assert len(hits) == 10
        assert scores == sorted(scores, reverse=True)
        for h in hits:  # a score is the true cosine of that paper, whatever path produced it
            row = corpus.ids.index(h.paper_id)
            assert h.score == pytest.approx(float(corpus.vectors[row] @ (q / np.linalg.norm(q))), abs=2e-3)
        found += len(set(ids(hits)) & set(corpus.expected(q, 10)))
    assert found / 400 >= 0.97  # exact is 1.0; HNSW re-scored must stay close


def test_k_larger_than_corpus_returns_every_paper(open_index: Opener, corpus: Corpus) -> None:
    index = open_index()
    index.upsert(corpus.records[:25])
    hits = index.search(corpus.vectors[0], 100)
    assert sorted(ids(hits)) == sorted(corpus.ids[:25])


def test_empty_index(open_index: Opener) -> None:
    index = open_index()
    assert len(index) == 0
    assert index.search(np.ones(DIM, dtype=np.float32), 10) == []
    assert index.search(np.ones(DIM, dtype=np.float32), 10, SearchFilters(has_code=True)) == []
    assert index.vector("2401.00001") is None
    index.remove(["2401.00001"])  # removing what is not there is not an error
    assert index.manifest.count == 0


def test_k_zero_and_zero_query_return_nothing(filled: StoredVectorIndex) -> None:
    assert filled.search(np.ones(DIM, dtype=np.float32), 0) == []
    assert filled.search(np.zeros(DIM, dtype=np.float32), 5) == []


def test_query_of_wrong_dimension_is_a_clear_error(filled: StoredVectorIndex) -> None:
    with pytest.raises(ValueError, match="query vector has 7 dimensions, the index has 48"):
        filled.search(np.ones(7, dtype=np.float32), 3)


def test_record_of_wrong_dimension_names_the_paper(open_index: Opener) -> None:
    bad = VectorRecord("2401.99999", np.ones(5, dtype=np.float32), None, (), False)
    with pytest.raises(ValueError, match=r"paper 2401\.99999: vector has shape \(5,\)"):
        open_index().upsert([bad])


def _filters_id(filters: SearchFilters) -> str:
    """A test id that is the same in every process: a frozenset's order follows the string hash seed, which
    differs between pytest-xdist workers (they would collect different tests)."""
    ids = filters.paper_ids
    shown = dataclasses.replace(filters, paper_ids=None)
    return repr(shown)[:100] + ("" if ids is None else f"+{len(ids)} ids")


@pytest.mark.parametrize(
    "filters",
    [
        SearchFilters(categories=("cs.CL",)),
        SearchFilters(categories=("cs.RO", "cs.DB")),
        SearchFilters(has_code=True),
        SearchFilters(has_code=False),
        SearchFilters(date_from=date(2023, 1, 1)),
        SearchFilters(date_to=date(2020, 6, 30)),
        SearchFilters(date_from=date(2021, 3, 1), date_to=date(2021, 9, 30), categories=("cs.LG",)),
        SearchFilters(date_from=date(2022, 1, 1), has_code=True, categories=("cs.CV", "cs.AI")),
        SearchFilters(categories=("no.such",)),
        # a topic's papers, as the search service hands them over (docs/topics.md)
        SearchFilters(paper_ids=frozenset(f"2401.{i:05d}" for i in range(0, 3000, 7))),
        SearchFilters(
            paper_ids=frozenset({"9999.99999", *(f"2401.{i:05d}" for i in range(0, 3000, 150))}),
            categories=("cs.LG",),
        ),
        SearchFilters(paper_ids=frozenset()),
    ],
    ids=lambda f: _filters_id(f),
)
def test_filters_match_brute_force(filled: StoredVectorIndex, corpus: Corpus, filters: SearchFilters) -> None:
    keep = passes(filters)
    allowed = sum(keep(r) for r in corpus.records)
    agree = total = 0
    for q in queries(corpus, 20):
        hits = filled.search(q, 10, filters)
        want = corpus.expected(q, 10, keep)
        assert len(hits) == len(want) == min(10, allowed)  # never starved by the filter
        assert all(keep(corpus.records[corpus.ids.index(h.paper_id)]) for h in hits)
        agree += len(set(ids(hits)) & set(want))
        total += len(want)
    assert agree >= 0.95 * total


def test_a_filter_matching_a_tenth_of_a_percent_equals_exact_filtered_search(open_index: Opener) -> None:
    corpus = make_corpus(10_000, seed=3)
    index = open_index()
    index.upsert(corpus.records)
    rare = SearchFilters(categories=(RARE,))
    assert sum(RARE in r.categories for r in corpus.records) == 10
    for q in queries(corpus, 10):
        for k in (3, 10):
            assert ids(index.search(q, k, rare)) == corpus.expected(q, k, passes(rare))


def test_exclude_removes_papers_from_results(filled: StoredVectorIndex, corpus: Corpus) -> None:
    q = corpus.vectors[10]
    top = ids(filled.search(q, 5))
    assert top[0] == corpus.ids[10]
    hits = filled.search(q, 5, exclude=[*top[:3], "not-indexed"])
    assert not set(ids(hits)) & set(top[:3])
    assert ids(hits)[:2] == top[3:5]
    assert len(hits) == 5
    filtered = filled.search(q, 5, SearchFilters(categories=("cs.LG",)), exclude=[corpus.ids[10]])
    assert corpus.ids[10] not in ids(filtered)


def test_upsert_replaces_vector_and_facets(filled: StoredVectorIndex, corpus: Corpus) -> None:
    target = corpus.records[42]
    new_vector = corpus.vectors[2000].copy()
    filled.upsert([dataclasses.replace(target, vector=new_vector, categories=(RARE,), has_code=True)])
    assert len(filled) == 3000
    stored = filled.vector(target.paper_id)
    assert stored is not None
    np.testing.assert_allclose(stored, new_vector, atol=2e-3)
    # Its new vector finds it next to paper 2000; its old one no longer does.
    assert set(ids(filled.search(new_vector, 2))) == {target.paper_id, corpus.ids[2000]}
    assert target.paper_id not in ids(filled.search(corpus.vectors[42], 5))
    # Facets follow the update: it now passes the rare-category filter.
    assert target.paper_id in ids(filled.search(new_vector, 3, SearchFilters(categories=(RARE,))))
    assert target.paper_id not in ids(filled.search(new_vector, 50, SearchFilters(categories=tuple(COMMON))))


def test_upsert_batch_with_duplicate_ids_keeps_the_last(open_index: Opener, corpus: Corpus) -> None:
    index = open_index()
    first, second = corpus.records[0], dataclasses.replace(corpus.records[0], vector=corpus.vectors[1])
    index.upsert([first, second])
    assert len(index) == 1
    stored = index.vector(first.paper_id)
    assert stored is not None
    np.testing.assert_allclose(stored, corpus.vectors[1], atol=2e-3)


def test_remove(filled: StoredVectorIndex, corpus: Corpus) -> None:
    gone = corpus.ids[:300]
    filled.remove([*gone, "never-indexed"])
    assert len(filled) == 2700
    assert filled.vector(gone[0]) is None
    for i in (0, 100, 299):
        hits = filled.search(corpus.vectors[i], 10)
        assert not set(ids(hits)) & set(gone)
        assert len(hits) == 10
    hits = filled.search(corpus.vectors[0], 10, SearchFilters(has_code=True))
    assert not set(ids(hits)) & set(gone)
    filled.remove(gone)  # idempotent
    assert len(filled) == 2700


def test_vector_returns_the_stored_unit_vector(filled: StoredVectorIndex, corpus: Corpus) -> None:
    got = filled.vector(corpus.ids[7])
    assert got is not None
    assert got.dtype == np.float32
    assert got.shape == (DIM,)
    np.testing.assert_allclose(got, corpus.vectors[7], atol=2e-3)


def test_vectors_returns_the_stored_vectors_of_known_ids_in_one_lookup(
    filled: StoredVectorIndex, corpus: Corpus
) -> None:
    wanted = [corpus.ids[3], "no-such-paper", corpus.ids[2999], corpus.ids[3]]
    got = filled.vectors(wanted)
    assert set(got) == {corpus.ids[3], corpus.ids[2999]}
    for i in (3, 2999):
        assert got[corpus.ids[i]].dtype == np.float32
        np.testing.assert_allclose(got[corpus.ids[i]], corpus.vectors[i], atol=2e-3)
    assert filled.vectors([]) == {}


def test_centroid_is_the_mean_of_the_live_vectors_and_follows_changes(
    open_index: Opener, corpus: Corpus
) -> None:
    index = open_index()
    assert index.centroid() is None  # empty
    index.upsert(corpus.records[:200])
    index.save()
    mean = index.centroid()
    assert mean is not None
    assert mean.dtype == np.float32
    assert mean.shape == (DIM,)
    np.testing.assert_allclose(mean, corpus.vectors[:200].mean(axis=0), atol=2e-3)
    index.remove(corpus.ids[:100])  # the mean of what is left, not of what was once stored
    index.save()
    after = index.centroid()
    assert after is not None
    np.testing.assert_allclose(after, corpus.vectors[100:200].mean(axis=0), atol=2e-3)
    assert float(np.abs(after - mean).max()) > 0.01
    index.upsert(corpus.records[1000:1300])  # new rows count before a save too
    grown = index.centroid()
    assert grown is not None
    np.testing.assert_allclose(
        grown,
        np.concatenate([corpus.vectors[100:200], corpus.vectors[1000:1300]]).mean(axis=0),
        atol=2e-3,
    )


def test_vectors_are_normalised_on_the_way_in(open_index: Opener, corpus: Corpus) -> None:
    index = open_index()
    index.upsert([dataclasses.replace(r, vector=r.vector * 7.5) for r in corpus.records[:50]])
    hits = index.search(corpus.vectors[3] * 0.1, 1)
    assert ids(hits) == [corpus.ids[3]]
    assert hits[0].score == pytest.approx(1.0, abs=2e-3)


def test_zero_vector_is_rejected_with_the_paper_id(open_index: Opener) -> None:
    bad = VectorRecord("2401.00077", np.zeros(DIM, dtype=np.float32), None, (), False)
    with pytest.raises(ValueError, match=r"2401\.00077: vector is zero or not finite"):
        open_index().upsert([bad])
