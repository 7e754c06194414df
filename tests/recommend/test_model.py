"""The reader model on synthetic vectors: it must beat mean-cosine where the saved papers share a style
that is common in the stream, cross-fit its random negatives, and fall back to similarity when cold."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from paperfeed.domain.recommend import ModelParams, ReaderModel, fit_reader_model, nearest, sample_ids

F32 = npt.NDArray[np.float32]
DIM = 32


def _papers(rng: np.random.Generator, topics: npt.NDArray[np.int64], styled: npt.NDArray[np.bool_]) -> F32:
    """Unit vectors: a topic direction (e1..e9), plus a strong "style" direction e0 on styled papers
    (say, long theory papers: half of the stream has it), plus noise."""
    x = rng.normal(scale=0.35, size=(len(topics), DIM))
    x[np.arange(len(topics)), 1 + topics] += 1.0
    x[styled, 0] += 1.6
    unit: F32 = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    return unit


def _two_topics(seed: int) -> tuple[F32, F32, list[str], set[str]]:
    """Positives: 20 styled papers of topic 0. Candidates: 600 papers, 10 % of topic 0 (which this month
    are rarely styled), half of the others styled."""
    rng = np.random.default_rng(seed)
    positives = _papers(rng, np.zeros(20, np.int64), np.ones(20, np.bool_))
    topics = np.where(rng.random(600) < 0.1, 0, rng.integers(1, 9, 600))
    candidates = _papers(rng, topics, rng.random(600) < np.where(topics == 0, 0.05, 0.5))
    ids = [f"c{i}" for i in range(600)]
    return positives, candidates, ids, {ids[i] for i in np.flatnonzero(topics == 0)}


def _precision_at_10(scores: npt.NDArray[np.float64], ids: list[str], relevant: set[str]) -> float:
    top = np.argsort(-scores, kind="stable")[:10]
    return sum(ids[i] in relevant for i in top) / 10


@pytest.mark.parametrize("learner", ["logistic", "svm"])
def test_the_learned_model_beats_mean_cosine_on_two_topics(learner: str) -> None:
    model_p, mean_p = [], []
    for seed in range(5):
        positives, candidates, ids, relevant = _two_topics(seed)
        params = ModelParams(learner=learner, c=1.0 if learner == "logistic" else 0.1, negatives=200)  # type: ignore[arg-type]
        random_ids = sample_ids(ids, params.negatives, f"reader{seed}")
        rows = [ids.index(p) for p in random_ids]
        model = fit_reader_model(positives, random_ids, candidates[rows], params)
        assert model.kind == "model"
        model_p.append(_precision_at_10(model.score(ids, candidates), ids, relevant))
        centre = positives.mean(axis=0)
        mean_p.append(_precision_at_10(candidates @ centre / np.linalg.norm(centre), ids, relevant))
    # mean-cosine is drawn to the style every saved paper happens to share; the model learns it is common
    assert np.mean(mean_p) < 0.2
    assert np.mean(model_p) > 0.45


def test_random_negatives_are_scored_out_of_fold() -> None:
    positives, candidates, ids, _ = _two_topics(0)
    random_ids = ids[:100]
    model = fit_reader_model(positives, random_ids, candidates[:100], ModelParams(negatives=100))
    assert model.weights.shape == (2, DIM)
    per_fold = candidates.astype(np.float64) @ model.weights.T + model.biases
    raw = model.raw(ids, candidates)
    for row, paper_id in enumerate(ids[:100]):
        other = 1 - model.fold_of[paper_id]
        assert raw[row] == pytest.approx(per_fold[row, other])
    assert raw[100:] == pytest.approx(per_fold[100:].mean(axis=1))
    # scores are standardised by those out-of-fold scores of the random papers
    reference = model.score(random_ids, candidates[:100])
    assert reference.mean() == pytest.approx(0.0, abs=1e-9)
    assert reference.std() == pytest.approx(1.0)


def test_without_cross_fitting_one_classifier_scores_everyone() -> None:
    positives, candidates, ids, _ = _two_topics(1)
    model = fit_reader_model(positives, ids[:100], candidates[:100], ModelParams(cross_fit=False))
    assert model.weights.shape == (1, DIM)
    assert model.fold_of == {}


def test_dismissed_papers_push_their_topic_down() -> None:
    rng = np.random.default_rng(3)
    positives = _papers(rng, np.array([0] * 10 + [1] * 10), np.zeros(20, np.bool_))
    dismissed = _papers(rng, np.ones(40, np.int64), np.zeros(40, np.bool_))
    stream = _papers(rng, rng.integers(2, 9, 200), np.zeros(200, np.bool_))
    ids = [f"r{i}" for i in range(200)]
    probe = _papers(rng, np.repeat([0, 1], 100), np.zeros(200, np.bool_))  # 100 papers of each topic
    plain = fit_reader_model(positives, ids, stream, ModelParams())
    told = fit_reader_model(positives, ids, stream, ModelParams(), dismissed=dismissed)

    def gap(model: ReaderModel) -> float:
        scores = model.score([f"p{i}" for i in range(200)], probe)
        return float(scores[:100].mean() - scores[100:].mean())

    gap_plain, gap_told = gap(plain), gap(told)
    assert gap_told > gap_plain + 0.5  # topic 1 (dismissed) falls behind topic 0


def test_cold_start_uses_similarity_below_min_positives() -> None:
    positives, candidates, ids, _ = _two_topics(2)
    few = positives[:3]
    model = fit_reader_model(few, ids[:200], candidates[:200], ModelParams(min_positives=5, cold_start="max"))
    assert model.kind == "similarity"
    expected = (candidates.astype(np.float64) @ few.T.astype(np.float64)).max(axis=1)
    assert model.raw(ids, candidates) == pytest.approx(expected)
    assert model.directions.shape == (3, DIM)  # max-similarity: one nearest-neighbour query per saved paper
    mean = fit_reader_model(few, ids[:200], candidates[:200], ModelParams())  # the default: mean cosine
    assert mean.kind == "similarity"
    expected = (candidates.astype(np.float64) @ few.T.astype(np.float64)).mean(axis=1)
    assert mean.raw(ids, candidates) == pytest.approx(expected)
    assert mean.directions.shape == (1, DIM)
    with pytest.raises(ValueError, match="at least one positive"):
        fit_reader_model(positives[:0], ids, candidates, ModelParams())


def test_model_directions_rank_like_the_model() -> None:
    positives, candidates, ids, _ = _two_topics(4)
    model = fit_reader_model(positives, ids[:200], candidates[:200], ModelParams())
    (direction,) = model.directions
    assert np.linalg.norm(direction) == pytest.approx(1.0, abs=1e-5)
    outside = candidates[200:]
    order_model = np.argsort(-model.score(ids[200:], outside), kind="stable")[:20]
    order_index = np.argsort(-(outside @ direction), kind="stable")[:20]
    assert list(order_model) == list(order_index)


def test_sample_ids_is_deterministic_and_honours_exclusions() -> None:
    ids = [f"p{i}" for i in range(100)]
    first = sample_ids(ids, 10, "u1|v1", frozenset({"p1", "p2"}))
    assert first == sample_ids(list(reversed(ids)), 10, "u1|v1", frozenset({"p1", "p2"}))
    assert len(set(first)) == 10
    assert not {"p1", "p2"} & set(first)
    assert first != sample_ids(ids, 10, "u1|v2")
    assert sorted(sample_ids(ids[:5], 10, "x")) == sorted(ids[:5])


def test_nearest_names_the_most_similar_anchor() -> None:
    anchors = np.eye(4, dtype=np.float32)[:3]
    rows = np.array([[0.1, 0.9, 0.0, 0.0], [0.0, 0.0, 0.2, 0.8]], np.float32)
    best, sims = nearest(anchors, rows)
    assert list(best) == [1, 2]
    assert sims == pytest.approx([0.9, 0.2])
