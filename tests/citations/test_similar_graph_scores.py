"""The citation-graph similarity (domain/graph_similarity.py): direct links plus shared neighbours
weighted by 1 / ln(1 + degree), restricted to the store, with the reasons in words; and the filters the
vector index applies."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime

import pytest

from paperfeed.domain.graph_similarity import (
    GraphEvidence,
    hub_weight,
    matches_filters,
    popularity,
    rank_by_graph,
)
from paperfeed.domain.models import Paper
from paperfeed.domain.paper_graph import GraphNeighbourhood
from paperfeed.domain.search import Reason, SearchFilters

Q = "2401.00001"


def test_a_shared_neighbour_counts_less_the_more_papers_it_links() -> None:
    assert hub_weight(1) == pytest.approx(1 / math.log(2))
    assert hub_weight(2) == pytest.approx(1 / math.log(3))
    assert hub_weight(1000) == pytest.approx(1 / math.log(1001))
    assert hub_weight(0) == hub_weight(1)  # a neighbour has one link at least
    assert hub_weight(2) > hub_weight(10) > hub_weight(1000)


def hand_worked() -> GraphNeighbourhood:
    """Q cites R (degree 3: Q, A and B cite it) and HUB (degree 101); C1 (degree 3) and C2 (degree 2)
    cite Q. A cites R and HUB; B cites R; C1 cites A too; R cites OLD; D cites C2. Q cites D directly;
    D and C1 are papers of the store, C2 is not (so it is never a candidate)."""
    return GraphNeighbourhood(
        references=frozenset({"R", "HUB", "D"}),
        citers=frozenset({"C1", "C2"}),
        cited_by={"R": ("A", "B"), "HUB": ("A",), "C2": ("D",), "D": ()},
        cites={"C1": ("A", "D"), "R": ("OLD",), "D": ()},  # papers of the store only: C2 is not one
        degrees={"R": 3, "HUB": 101, "C1": 3, "C2": 2, "D": 2},
        in_store=frozenset({"D", "C1"}),
    )


def test_ranking_adds_direct_links_and_weighted_shared_neighbours() -> None:
    ranked = rank_by_graph(Q, hand_worked())
    scores = {e.key: e.score for e in ranked}
    w = hub_weight
    # A: couples through R and HUB, co-cited with Q by C1
    assert scores["A"] == pytest.approx(w(3) + w(101) + w(3))
    assert scores["B"] == pytest.approx(w(3))  # couples through R
    assert scores["OLD"] == pytest.approx(w(3))  # cited by Q's reference R
    # D: Q cites it (1), C1 cites both (co-citation), D cites C2 which cites Q (chain)
    assert scores["D"] == pytest.approx(1 + w(3) + w(2))
    assert scores["C1"] == pytest.approx(1)  # it cites Q: a direct link, nothing shared
    assert "C2" not in scores  # it cites Q, but it is not a paper of the store
    assert [e.key for e in ranked] == ["D", "A", "C1", "B", "OLD"]  # ties (B, OLD) by key
    a = next(e for e in ranked if e.key == "A")
    assert (a.shared_references, a.co_citations, a.cites_it, a.cited_by_it) == (2, 1, False, False)


def test_a_candidates_own_citations_raise_its_links_by_a_log() -> None:
    assert popularity(0) == 1.0
    assert popularity(100) == pytest.approx(1 + math.log(101))
    hood = GraphNeighbourhood(
        references=frozenset({"R"}),
        cited_by={"R": ("CLASSIC", "NEW")},
        degrees={"R": 3},
        citations={"CLASSIC": 1000, "NEW": 0},
    )
    ranked = rank_by_graph(Q, hood)
    assert [e.key for e in ranked] == ["CLASSIC", "NEW"]  # the same link; the classic is cited 1000 times
    classic, new = ranked
    assert classic.links == pytest.approx(hub_weight(3))
    assert classic.citations == 1000
    assert classic.score == pytest.approx(hub_weight(3) * (1 + math.log(1001)))
    assert new.score == pytest.approx(hub_weight(3))


def test_the_paper_itself_is_never_ranked() -> None:
    hood = GraphNeighbourhood(
        references=frozenset({"R"}), cited_by={"R": (Q, "A")}, degrees={"R": 2}, in_store=frozenset()
    )
    assert [e.key for e in rank_by_graph(Q, hood)] == ["A"]


def test_a_paper_without_edges_ranks_nothing() -> None:
    assert rank_by_graph(Q, GraphNeighbourhood()) == []


def test_reasons_say_the_evidence_in_words_strongest_first() -> None:
    e = GraphEvidence(
        "X", 3.0, co_citations=12, shared_references=8, cited_by_references=1, cites_citers=2, cites_it=True
    )
    assert [r.text for r in e.reasons()] == [
        "cites it",
        "cited together with it by 12 papers",
        "shares 8 references",
        "cited by 1 of its references",
        "cites 2 papers that cite it",
    ]
    assert e.reasons()[1] == Reason("co_cited", 12, "cited together with it by 12 papers")
    one = GraphEvidence("Y", 1.0, co_citations=1, shared_references=1, cites_citers=1, cited_by_it=True)
    assert [r.text for r in one.reasons()] == [
        "cited by it",
        "cited together with it by 1 paper",
        "shares 1 reference",
        "cites 1 paper that cites it",
    ]
    assert [r.kind for r in one.reasons()] == ["cited_by", "co_cited", "shared_references", "cites_citers"]


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
