from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paperfeed.domain.fusion import WeightedList, blend_evidence, fuse_weighted, reciprocal_rank_fusion
from paperfeed.domain.search import ScoredId, distinctive_terms


def ids(*names: str) -> list[ScoredId]:
    return [ScoredId(n, 1.0 / (i + 1)) for i, n in enumerate(names)]


def test_documents_in_both_lists_rise() -> None:
    fused = reciprocal_rank_fusion([ids("a", "b", "c"), ids("c", "d", "a")], k=60)
    assert [f.paper_id for f in fused][:2] == ["a", "c"]
    assert fused[0].ranks == (1, 3)
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 63)


def test_weights_tilt_the_ranking() -> None:
    lists = [ids("kw1", "kw2"), ids("de1", "de2")]
    assert reciprocal_rank_fusion(lists, [2.0, 1.0])[0].paper_id == "kw1"
    assert reciprocal_rank_fusion(lists, [1.0, 2.0])[0].paper_id == "de1"


def test_validation() -> None:
    with pytest.raises(ValueError, match="one weight per list"):
        reciprocal_rank_fusion([ids("a")], [1.0, 2.0])
    with pytest.raises(ValueError, match="k must be"):
        reciprocal_rank_fusion([ids("a")], k=-1)
    assert reciprocal_rank_fusion([[], []]) == []


@given(st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=8), min_size=1, max_size=3))
def test_fusion_is_a_ranking_of_the_union(raw: list[list[str]]) -> None:
    lists = [ids(*items) for items in raw]
    fused = reciprocal_rank_fusion(lists)
    assert {f.paper_id for f in fused} == {x for items in raw for x in items}
    assert all(a.score >= b.score for a, b in itertools.pairwise(fused))


def test_named_lists_fuse_in_their_order_and_a_zero_weight_only_reports_ranks() -> None:
    dense, keyword = ids("a", "b", "c"), ids("c", "b")
    fused = fuse_weighted([WeightedList("dense", 1.0, dense), WeightedList("keyword", 2.0, keyword)], k=10)
    assert [f.paper_id for f in fused] == ["c", "b", "a"]
    assert fused[0].ranks == (3, 1)
    off = fuse_weighted([WeightedList("dense", 1.0, dense), WeightedList("keyword", 0.0, keyword)], k=10)
    assert [f.paper_id for f in off] == ["a", "b", "c"]
    assert off[2].ranks == (3, 1)


def test_evidence_is_added_to_the_cosine_damped_by_a_square_root() -> None:
    cosines = {"a": 0.8, "b": 0.7, "c": 0.2, "d": 0.5}
    graph = {"b": 1.0, "c": 16.0, "e": 4.0}  # e: found by the graph only, not embedded
    blended = blend_evidence(["a", "b", "c", "d", "e"], cosines, [(0.2, graph)])
    assert [(x.paper_id, round(x.score, 6)) for x in blended] == [
        ("c", 1.0),  # 0.2 + 0.2 · 4
        ("b", 0.9),  # 0.7 + 0.2 · 1
        ("a", 0.8),
        ("d", 0.5),
        ("e", 0.4),  # 0 + 0.2 · 2
    ]
    # no evidence: the cosine alone; ties keep the candidates' order
    assert [x.paper_id for x in blend_evidence(["x", "y"], {"x": 0.1, "y": 0.1}, [])] == ["x", "y"]
    # two sources add up; negative evidence counts as none
    two = blend_evidence(["a", "b"], {}, [(1.0, {"a": 4.0}), (0.5, {"a": 1.0, "b": -3.0})])
    assert [(x.paper_id, x.score) for x in two] == [("a", 2.5), ("b", 0.0)]


def test_distinctive_terms_rank_by_tf_idf_and_drop_what_only_the_paper_has() -> None:
    counts = {"protein": 3, "the": 9, "fold": 1, "zyx": 5}
    doc_freq = {"protein": 40.0, "the": 990.0, "fold": 10.0, "zyx": 1.0}
    assert distinctive_terms(counts, doc_freq, 1000, 3) == ["protein", "fold", "the"]
    assert distinctive_terms(counts, doc_freq, 1000, 1) == ["protein"]
    assert distinctive_terms(counts, doc_freq, 1000, 0) == []
    assert distinctive_terms({"new": 1}, {}, 1000, 5) == ["new"]  # unknown: as rare as allowed
