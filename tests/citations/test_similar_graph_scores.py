"""The citation-graph similarity (domain/graph_similarity.py): Salton's cosine of coupling and
co-citation, restricted to the store, and the filters the vector index applies."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime

import pytest

from paperfeed.domain.graph_similarity import (
    graph_score,
    matches_filters,
    rank_graph_similar,
    salton_cosine,
)
from paperfeed.domain.models import Paper
from paperfeed.domain.paper_graph import LinkCounts, RelatedCounts
from paperfeed.domain.search import SearchFilters


def counts(refs: int, cites: int) -> LinkCounts:
    return LinkCounts(references=refs, citations=cites, citations_last_12_months=0)


def test_salton_cosine_normalises_by_both_degrees() -> None:
    assert salton_cosine(3, 9, 4) == pytest.approx(3 / 6)
    assert salton_cosine(0, 9, 4) == 0.0
    # a short list wholly inside a long one: the cosine keeps it visible (Jaccard would give 0.1)
    assert salton_cosine(10, 10, 100) == pytest.approx(10 / math.sqrt(1000))
    # counts below the overlap (read at another moment) never push the score above 1
    assert salton_cosine(5, 2, 0) == pytest.approx(1.0)


def test_graph_score_adds_coupling_and_co_citation() -> None:
    a, b = counts(refs=20, cites=5), counts(refs=5, cites=20)
    assert graph_score(4, 2, a, b) == pytest.approx(4 / 10 + 2 / 10)
    assert graph_score(4, 0, None, None) == pytest.approx(1.0)  # no counts: the overlap is the degree


def test_ranking_keeps_store_papers_best_first_and_never_the_paper() -> None:
    related = RelatedCounts(
        coupling={"2401.00002": 6, "2401.00003": 1, "doi:10.1/out": 9, "2401.00001": 3},
        co_citation={"2401.00003": 4, "2401.00004": 1},
        in_store=frozenset({"2401.00001", "2401.00002", "2401.00003", "2401.00004"}),
    )
    table = {
        "2401.00001": counts(10, 8),
        "2401.00002": counts(40, 0),  # a survey: six shared references out of forty
        "2401.00003": counts(10, 8),
        "2401.00004": counts(3, 2),
        "doi:10.1/out": counts(10, 1),
    }
    ranked = rank_graph_similar("2401.00001", related, table)
    assert [k for k, _ in ranked] == ["2401.00003", "2401.00002", "2401.00004"]
    scores = dict(ranked)
    assert scores["2401.00003"] == pytest.approx(1 / 10 + 4 / 8)
    assert scores["2401.00002"] == pytest.approx(6 / 20)
    assert scores["2401.00004"] == pytest.approx(1 / 4)


def test_a_paper_without_edges_ranks_nothing() -> None:
    assert rank_graph_similar("2401.00001", RelatedCounts(), {}) == []


def test_filters_match_as_the_vector_index_applies_them() -> None:
    p = Paper(
        id="2401.00001",
        title="t",
        abstract="a",
        categories=("cs.CL", "cs.LG"),
        published=datetime(2024, 1, 2, 10, tzinfo=UTC),
        github_repo="https://github.com/a/b",
    )
    undated = Paper(id="2401.00002", title="t", abstract="a")
    assert matches_filters(p, SearchFilters(categories=("cs.LG",)))
    assert not matches_filters(p, SearchFilters(categories=("cs.CV",)))
    assert matches_filters(p, SearchFilters(date_from=date(2024, 1, 2), date_to=date(2024, 1, 2)))
    assert not matches_filters(p, SearchFilters(date_from=date(2024, 1, 3)))
    assert not matches_filters(undated, SearchFilters(date_to=date(2030, 1, 1)))
    assert matches_filters(p, SearchFilters(has_code=True))
    assert not matches_filters(undated, SearchFilters(has_code=True))
    assert matches_filters(undated, SearchFilters(has_code=False))
