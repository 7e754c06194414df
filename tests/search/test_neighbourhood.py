"""Neighbourhood re-ranking of similar papers (domain/neighbourhood.py) on vectors worked out by hand."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from paperfeed.domain.neighbourhood import neighbourhood_scores, rerank_by_neighbourhood
from paperfeed.domain.search import ScoredId


def unit(*values: float) -> npt.NDArray[np.float32]:
    v = np.array(values, dtype=np.float32)
    out: npt.NDArray[np.float32] = v / np.linalg.norm(v)
    return out


QUERY = unit(1, 0, 0, 0)
LONE = unit(0.84, 0, 0.54, 0)  # close to the query, but nothing else is near it
PAIR = [unit(0.86, 0.5, 0, 0.05), unit(0.86, 0.5, 0, -0.05)]  # the query's nearest, side by side
KIN = unit(0.78, 0.62, 0, 0)  # further from the query than LONE, but among the query's nearest neighbours
CANDIDATES = np.stack([LONE, *PAIR, KIN])


def order(scores: npt.NDArray[np.float32]) -> list[int]:
    return [int(i) for i in np.argsort(-scores, kind="stable")]


def test_without_a_neighbourhood_scores_are_plain_cosines() -> None:
    scores = neighbourhood_scores(QUERY, CANDIDATES, centre=None, k=0, power=3.0)
    assert scores == pytest.approx(CANDIDATES @ QUERY, abs=1e-6)
    assert order(scores) == [1, 2, 0, 3]  # the pair, then LONE, then KIN


@pytest.mark.parametrize("k", [1, 2])
def test_a_candidate_among_the_querys_neighbours_passes_a_lone_one(k: int) -> None:
    scores = neighbourhood_scores(QUERY, CANDIDATES, centre=None, k=k, power=1.0)
    assert order(scores) == [1, 2, 3, 0]  # KIN now before LONE
    assert order(neighbourhood_scores(QUERY, CANDIDATES, centre=None, k=k, power=3.0)) == [1, 2, 3, 0]


def test_the_centre_is_taken_off_before_the_cosines() -> None:
    centre = unit(1, 0, 0, 0) * 0.5
    scores = neighbourhood_scores(QUERY, CANDIDATES, centre=centre, k=0, power=1.0)
    moved = CANDIDATES - centre
    expected = (moved / np.linalg.norm(moved, axis=1, keepdims=True)) @ unit(*(QUERY - centre))
    assert scores == pytest.approx(expected, abs=1e-6)
    assert scores[0] < 0.6  # not the uncentred 0.84


def test_degenerate_inputs() -> None:
    assert neighbourhood_scores(QUERY, np.zeros((0, 4), np.float32), centre=None, k=5, power=3.0).shape == (
        0,
    )
    one = neighbourhood_scores(QUERY, LONE.reshape(1, -1), centre=None, k=30, power=3.0)  # k > pool
    assert one.shape == (1,)
    assert -1.0 <= float(one[0]) <= 1.0
    same = neighbourhood_scores(QUERY, np.stack([QUERY, LONE]), centre=QUERY, k=0, power=1.0)
    assert np.isfinite(same).all()  # a candidate equal to the centre has no direction: no NaN


def test_rerank_orders_scored_ids_by_neighbourhood_and_leaves_out_those_without_a_vector() -> None:
    names = ["lone", "pair-a", "pair-b", "kin"]
    items = [ScoredId(n, float(c)) for n, c in zip(names, CANDIDATES @ QUERY, strict=True)]
    vectors = dict(zip(names, CANDIDATES, strict=True))
    ranked = rerank_by_neighbourhood(QUERY, items, vectors, centre=None, k=2, power=1.0)
    expected = neighbourhood_scores(QUERY, CANDIDATES, centre=None, k=2, power=1.0)
    assert [x.paper_id for x in ranked] == ["pair-a", "pair-b", "kin", "lone"]
    assert [x.score for x in ranked] == pytest.approx([float(expected[i]) for i in (1, 2, 3, 0)])
    del vectors["kin"]
    fewer = rerank_by_neighbourhood(QUERY, items, vectors, centre=None, k=2, power=1.0)
    assert [x.paper_id for x in fewer] == ["pair-a", "pair-b", "lone"]
    assert rerank_by_neighbourhood(QUERY, items, {}, centre=None, k=2, power=1.0) == items


def test_blend_mixes_the_neighbourhood_cosine_with_the_plain_one() -> None:
    plain = neighbourhood_scores(QUERY, CANDIDATES, centre=None, k=0, power=1.0)
    smoothed = neighbourhood_scores(QUERY, CANDIDATES, centre=None, k=2, power=1.0, blend=1.0)
    assert smoothed == pytest.approx(neighbourhood_scores(QUERY, CANDIDATES, centre=None, k=2, power=1.0))
    assert neighbourhood_scores(QUERY, CANDIDATES, centre=None, k=2, power=1.0, blend=0.0) == pytest.approx(
        plain, abs=1e-6
    )
    half = neighbourhood_scores(QUERY, CANDIDATES, centre=None, k=2, power=1.0, blend=0.5)
    assert half == pytest.approx(0.5 * smoothed + 0.5 * plain, abs=1e-6)
    centre = unit(1, 0, 0, 0) * 0.5  # the blend's plain half is centred too
    mixed = neighbourhood_scores(QUERY, CANDIDATES, centre=centre, k=2, power=1.0, blend=0.25)
    expected = 0.25 * neighbourhood_scores(QUERY, CANDIDATES, centre=centre, k=2, power=1.0) + 0.75 * (
        neighbourhood_scores(QUERY, CANDIDATES, centre=centre, k=0, power=1.0)
    )
    assert mixed == pytest.approx(expected, abs=1e-6)


def test_a_blend_keeps_the_specific_match_above_the_neighbourhoods_favourite() -> None:
    # the whole neighbourhood lifts KIN over LONE (above); keeping half the plain cosine keeps LONE, the
    # closer paper, first: the neighbourhood reorders what the paper's own cosine leaves close
    whole = neighbourhood_scores(QUERY, CANDIDATES, centre=None, k=2, power=1.0, blend=1.0)
    half = neighbourhood_scores(QUERY, CANDIDATES, centre=None, k=2, power=1.0, blend=0.5)
    assert order(whole) == [1, 2, 3, 0]
    assert order(half) == [1, 2, 0, 3]
    names = ["lone", "pair-a", "pair-b", "kin"]
    items = [ScoredId(n, float(c)) for n, c in zip(names, CANDIDATES @ QUERY, strict=True)]
    vectors = dict(zip(names, CANDIDATES, strict=True))
    ranked = rerank_by_neighbourhood(QUERY, items, vectors, centre=None, k=2, power=1.0, blend=0.5)
    assert [x.paper_id for x in ranked] == ["pair-a", "pair-b", "lone", "kin"]
