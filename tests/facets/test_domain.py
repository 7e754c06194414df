"""The pure parts of facets: parsing a facet, sentence spans, role weights and the sentence matching."""

from __future__ import annotations

import numpy as np
import pytest

from paperfeed.adapters.sentences.splitter import SentencexSplitter
from paperfeed.domain.sentences import (
    FACET_ROLES,
    PaperSentences,
    Sentence,
    facet_query,
    facet_scores,
    max_sim,
    parse_facet,
    role_weights,
    spans_of,
)


def _sentence(role: str, p: float = 1.0) -> Sentence:
    probs = [0.0] * 5
    order = ["background", "objective", "method", "result", "other"]
    probs[order.index(role)] = p
    rest = (1.0 - p) / 4
    probs = [x if x else rest for x in probs]
    return Sentence(0, 1, role, tuple(probs))  # type: ignore[arg-type]


def test_parse_facet_accepts_the_four_and_names_them_when_wrong() -> None:
    assert parse_facet(None) == "overall"
    assert parse_facet("") == "overall"
    assert parse_facet(" Method ") == "method"
    with pytest.raises(ValueError, match="background, method, result"):
        parse_facet("methods")


def test_background_takes_the_objective_sentences_and_other_belongs_to_no_facet() -> None:
    assert FACET_ROLES["background"] == {"background", "objective"}
    assert all("other" not in roles for roles in FACET_ROLES.values())


def test_spans_strip_spaces_and_join_fragments_without_words() -> None:
    text = "We propose X.  In Sec. 3 we prove Thm. 1. It holds."
    pieces = ["We propose X.  ", "In Sec. 3 we prove Thm. ", "1. ", "It holds."]
    spans = spans_of(text, pieces)
    assert [text[a:b] for a, b in spans] == ["We propose X.", "In Sec. 3 we prove Thm. 1.", "It holds."]


def test_the_splitter_keeps_abbreviations_numbers_and_latex_inside_sentences() -> None:
    text = (
        "We study the $O(N)$ model in $d=2+\\epsilon$ dimensions, e.g. at $T\\approx 0.5$. The result is a "
        "3.5-fold speed-up (cf. Fig. 2 of Smith et al. 2020). Large models, e.g., GPT-4, agree."
    )
    sentences = [text[a:b] for a, b in SentencexSplitter().split(text)]
    assert sentences == [
        "We study the $O(N)$ model in $d=2+\\epsilon$ dimensions, e.g. at $T\\approx 0.5$.",
        "The result is a 3.5-fold speed-up (cf. Fig. 2 of Smith et al. 2020).",
        "Large models, e.g., GPT-4, agree.",
    ]
    assert SentencexSplitter().split("   ") == []


def test_role_weights_follow_the_probability_of_the_facet_with_a_floor() -> None:
    sentences = [_sentence("method", 0.9), _sentence("result", 0.8), _sentence("objective", 0.7)]
    assert role_weights(sentences, "method", 0.3) == pytest.approx([0.9, 0.3, 0.3])
    assert role_weights(sentences, "background", 0.0) == pytest.approx([0.05, 0.1, 0.775])
    assert role_weights(sentences, "overall", 0.3) == [1.0, 1.0, 1.0]


def test_facet_scores_by_hand() -> None:
    e = np.eye(3, dtype=np.float32)
    query = e[[0, 1]]  # two facet sentences, along x and along y
    only_x = (e[[0]], [1.0])  # meets one of the two
    both = (np.vstack([e[0], e[1]]), [1.0, 0.5])  # meets both, the second at half weight
    nothing: tuple[np.ndarray, list[float]] = (np.zeros((0, 3), dtype=np.float32), [])
    assert facet_scores(query, [only_x, both, nothing], "meanmax") == pytest.approx([0.5, 0.75, -1.0])
    assert facet_scores(query, [only_x, both], "max") == pytest.approx([1.0, 1.0])
    assert facet_scores(query, [only_x, both], "mean") == pytest.approx([0.5, 0.375])


def test_facet_scores_of_many_candidates_at_once_equal_each_one_alone() -> None:
    rng = np.random.default_rng(3)
    query = rng.normal(size=(4, 8)).astype(np.float32)
    candidates = [
        (rng.normal(size=(n, 8)).astype(np.float32), list(rng.uniform(0.2, 1.0, size=n)))
        for n in (3, 1, 0, 7, 2)
    ]
    for aggregate in ("meanmax", "max", "mean"):
        together = facet_scores(query, candidates, aggregate)
        alone = [facet_scores(query, [c], aggregate)[0] for c in candidates]
        assert together == pytest.approx(alone, abs=1e-5)
        for (vectors, weights), score in zip(candidates, together, strict=True):
            if not len(vectors):
                assert score == -1.0
                continue
            sims = (query @ vectors.T) * np.asarray(weights, dtype=np.float32)[None, :]
            by_hand = {"meanmax": sims.max(axis=1).mean(), "max": sims.max(), "mean": sims.mean()}
            assert score == pytest.approx(float(by_hand[aggregate]), abs=1e-5)


def test_max_sim_averages_each_side_s_best_matches() -> None:
    e = np.eye(3, dtype=np.float32)
    query = e[[0, 1]]
    every_part = np.vstack([e[1], e[0]])  # meets both sentences, in another order: 1 both ways
    one_part_twice = np.vstack([e[0], e[0], e[0]])  # meets one of two (0.5); each of its own is met (1)
    padded = np.vstack([e[0], e[1], e[2], e[2]])  # meets both (1); half of its own are met (0.5)
    empty = np.zeros((0, 3), np.float32)
    assert max_sim(query, [every_part, one_part_twice, padded, empty]) == pytest.approx(
        [1.0, 0.75, 0.75, -1.0]
    )
    # weights: the query's second sentence counts three times the first in the query's half
    assert max_sim(query, [e[[1]], e[[0]]], weights=[1.0, 3.0]) == pytest.approx(
        [0.5 * (0.75 + 1.0), 0.5 * (0.25 + 1.0)]
    )
    rng = np.random.default_rng(5)
    q, c = rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=(5, 4)).astype(np.float32)
    sims = q @ c.T
    assert max_sim(q, [c]) == pytest.approx([0.5 * (sims.max(1).mean() + sims.max(0).mean())], abs=1e-6)


def test_the_query_of_a_facet_is_its_sentences_of_those_roles() -> None:
    vectors = np.eye(3, dtype=np.float32)
    paper = PaperSentences(
        "p", "h", "m", "r", (_sentence("background"), _sentence("method"), _sentence("objective")), vectors
    )
    assert facet_query(paper, "background") is not None
    np.testing.assert_array_equal(facet_query(paper, "background"), vectors[[0, 2]])
    assert facet_query(paper, "result") is None
    np.testing.assert_array_equal(facet_query(paper, "overall"), vectors)
