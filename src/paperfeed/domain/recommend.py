"""How "For you" ranks recent papers for one reader, and why: pure functions over paper vectors.

The model is arxiv-sanity's idea on MiniLM vectors instead of tf-idf: a linear classifier per reader (or per
tag) that separates the papers they saved or upvoted (positives) from papers they dismissed plus a random
sample of recent papers (negatives). Ranking by its decision function finds what distinguishes *this*
reader's papers from the stream, which plain similarity to their mean cannot (the mean also points at
what every paper has in common). ``bench/recommend.py`` measures both on simulated readers.

Random negatives are drawn from the very pool that is ranked, so a candidate used as a negative would be
pushed down by its own label. :class:`ReaderModel` therefore *cross-fits*: the random negatives are split
into two folds, one classifier is trained per fold, and a paper that was a negative in one fold is scored by
the other classifier only (everyone else gets the mean of both). The same out-of-fold scores of the random
negatives are the reference distribution that turns raw scores into z-scores, so boosts (followed authors,
alerts) mean the same thing whatever the model.

Too few positives for a classifier (cold start) fall back to similarity to the saved papers: cosine to
their mean by default (maximum cosine over them, which keeps each of several distinct interests apart, was
worse at every number of saves on the bench), standardised the same way.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt

from .library import ReaderSignals, SavedSearch
from .models import Paper

__all__ = [
    "MailedPapers",
    "ModelParams",
    "ReaderModel",
    "Reason",
    "ReasonKind",
    "RecommendQueries",
    "Recommendation",
    "SignalsSource",
    "TrendingPapers",
    "Upvotes",
    "WindowMatches",
    "fit_reader_model",
    "nearest",
    "sample_ids",
]

Vectors = npt.NDArray[np.float32]
Scores = npt.NDArray[np.float64]

ReasonKind = Literal["similar", "author", "alert", "topic", "trending"]
Learner = Literal["logistic", "svm"]
ColdStart = Literal["max", "mean"]


@dataclass(frozen=True, slots=True)
class ModelParams:
    """Choices of the recommender; the defaults are the ones ``bench/recommend.py --tune`` picked.

    ``min_positives``: below this many positives the classifier is not trained (cold start).
    ``negatives``: random recent papers drawn as negatives (plus every dismissed paper).
    """

    learner: Learner = "logistic"
    c: float = 1.0  # inverse regularisation strength (sklearn's C)
    negatives: int = 200
    min_positives: int = 5
    cold_start: ColdStart = "mean"
    cross_fit: bool = True


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a paper is recommended; ``paper_id``/``paper_title`` name the saved paper it resembles,
    ``topic_id`` the picked topic it came from."""

    kind: ReasonKind
    text: str
    paper_id: str | None = None
    paper_title: str | None = None
    topic_id: int | None = None


@dataclass(frozen=True, slots=True)
class Recommendation:
    """A recommended paper: ``score`` is in standard deviations above a random recent paper (plus boosts)."""

    paper: Paper
    score: float
    reasons: tuple[Reason, ...]

    @property
    def reason(self) -> str:
        """The reasons as one line, strongest first."""
        return " · ".join(r.text for r in self.reasons)


def sample_ids(ids: Sequence[str], k: int, seed: str, exclude: frozenset[str] = frozenset()) -> list[str]:
    """``k`` ids drawn without replacement, the same ones for the same ``seed`` (a feed must not jitter)."""
    pool = sorted(set(ids) - exclude)
    if len(pool) <= k:
        return pool
    digest = hashlib.blake2b(seed.encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "little")).sample(pool, k)


def nearest(anchors: Vectors, vectors: Vectors) -> tuple[npt.NDArray[np.int64], Scores]:
    """For each row of ``vectors``: the index of the most similar anchor and that cosine similarity."""
    if len(anchors) == 0 or len(vectors) == 0:
        return np.zeros(len(vectors), np.int64), np.zeros(len(vectors))
    sims = np.asarray(vectors, np.float64) @ np.asarray(anchors, np.float64).T
    best = np.argmax(sims, axis=1)
    return best.astype(np.int64), sims[np.arange(len(vectors)), best]


def _fit(positives: Vectors, negatives: Vectors, params: ModelParams) -> tuple[Scores, float]:
    """(weights, bias) of one linear classifier, positives and negatives weighted to balance."""
    from sklearn.linear_model import LogisticRegression  # ~2 s to import: only on first use
    from sklearn.svm import LinearSVC

    x = np.vstack([positives, negatives]).astype(np.float64)
    y = np.r_[np.ones(len(positives)), np.zeros(len(negatives))]
    if params.learner == "svm":
        model: LogisticRegression | LinearSVC = LinearSVC(
            C=params.c, class_weight="balanced", max_iter=10_000, tol=1e-5
        )
    else:
        model = LogisticRegression(C=params.c, class_weight="balanced", max_iter=2_000, tol=1e-5)
    model.fit(x, y)
    return np.asarray(model.coef_[0], np.float64), float(model.intercept_[0])


@dataclass(frozen=True, slots=True)
class ReaderModel:
    """A trained (or cold-start) scorer for one reader. Build it with :func:`fit_reader_model`.

    ``weights`` holds one row per fold classifier (none in similarity mode); ``fold_of`` maps each random
    negative to the fold it was a training negative in; ``ref_mean``/``ref_std`` standardise raw scores
    by the out-of-fold scores of those negatives.
    """

    kind: Literal["model", "similarity"]
    positives: Vectors
    weights: Scores  # (folds, dim)
    biases: Scores  # (folds,)
    fold_of: dict[str, int]
    ref_mean: float
    ref_std: float
    cold_start: ColdStart = "mean"

    @property
    def directions(self) -> Vectors:
        """Unit query vectors for a nearest-neighbour index whose best matches are this model's best.

        One row (the mean classifier's weights, or the mean saved paper) except for max-similarity, whose
        best papers are the nearest neighbours of each saved paper.
        """
        if self.kind == "model":
            w = self.weights.mean(axis=0, keepdims=True)
        elif self.cold_start == "max":
            w = self.positives.astype(np.float64)
        else:
            w = self.positives.astype(np.float64).mean(axis=0, keepdims=True)
        norms = np.linalg.norm(w, axis=1, keepdims=True)
        unit: Vectors = (w / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        return unit

    def raw(self, ids: Sequence[str], vectors: Vectors) -> Scores:
        """Unstandardised scores; a random negative is scored only by the fold that did not train on it."""
        x = np.asarray(vectors, np.float64)
        if len(x) == 0:
            return np.zeros(0)
        if self.kind == "similarity":
            sims = x @ self.positives.astype(np.float64).T
            best: Scores = sims.max(axis=1) if self.cold_start == "max" else sims.mean(axis=1)
            return best
        per_fold = x @ self.weights.T + self.biases  # (n, folds)
        out: Scores = per_fold.mean(axis=1)
        folds = len(self.biases)
        if folds > 1:
            for row, paper_id in enumerate(ids):
                fold = self.fold_of.get(paper_id)
                if fold is not None:
                    others = [f for f in range(folds) if f != fold]
                    out[row] = per_fold[row, others].mean()
        return out

    def score(self, ids: Sequence[str], vectors: Vectors) -> Scores:
        """Standard deviations above the average random recent paper."""
        standard: Scores = (self.raw(ids, vectors) - self.ref_mean) / self.ref_std
        return standard


def fit_reader_model(
    positives: Vectors,
    random_ids: Sequence[str],
    random_vectors: Vectors,
    params: ModelParams,
    *,
    dismissed: Vectors | None = None,
) -> ReaderModel:
    """Train the reader's scorer: a classifier with enough positives, else similarity to the saved papers.

    ``random_ids``/``random_vectors`` are the random recent papers (negatives, and the reference for
    standardising scores); ``dismissed`` are the reader's "not interested" papers (always negatives).
    Raises ``ValueError`` without positives: a reader with none gets trending papers instead.
    """
    pos = np.asarray(positives, np.float32)
    if len(pos) == 0:
        raise ValueError("a reader model needs at least one positive paper")
    rand = np.asarray(random_vectors, np.float32).reshape(-1, pos.shape[1])
    extra = (
        np.zeros((0, pos.shape[1]), np.float32) if dismissed is None else np.asarray(dismissed, np.float32)
    )
    ids = list(random_ids)
    if len(pos) < params.min_positives or len(rand) + len(extra) < 2:
        empty = np.zeros((0, pos.shape[1]))
        model = ReaderModel("similarity", pos, empty, np.zeros(0), {}, 0.0, 1.0, params.cold_start)
        return _standardised(model, ids, rand)
    folds = 2 if params.cross_fit and len(rand) >= 20 else 1
    fold_of = {paper_id: i % folds for i, paper_id in enumerate(ids)} if folds > 1 else {}
    weights, biases = [], []
    for fold in range(folds):
        mine = [i for i in range(len(ids)) if folds == 1 or i % folds == fold]
        w, b = _fit(pos, np.vstack([rand[mine], extra]), params)
        weights.append(w)
        biases.append(b)
    model = ReaderModel("model", pos, np.vstack(weights), np.asarray(biases), fold_of, 0.0, 1.0)
    return _standardised(model, ids, rand)


def _standardised(model: ReaderModel, ids: Sequence[str], rand: Vectors) -> ReaderModel:
    if len(rand) < 2:
        return model
    ref = model.raw(ids, rand)
    std = float(ref.std())
    return replace(model, ref_mean=float(ref.mean()), ref_std=std if std > 1e-9 else 1.0)


class SignalsSource(Protocol):
    """The library's read of one reader (``LibraryService.signals``)."""

    def signals(self, user_id: int) -> ReaderSignals: ...


class RecommendQueries(Protocol):
    """Store reads (``adapters/store/recommend_queries.py``)."""

    def latest_published(self) -> datetime | None: ...

    def version(self, model_id: str) -> str:
        """Changes whenever papers or ``model_id`` vectors change."""
        ...

    def recent(self, model_id: str, since: datetime, until: datetime) -> list[tuple[str, tuple[str, ...]]]:
        """(paper id, author keys) of papers published in ``[since, until)`` with a ``model_id`` vector."""
        ...


class WindowMatches(Protocol):
    """A saved search's matches published within ``[first, last]``, best first (``services/alerts.py``):
    the alerts "For you" boosts and a digest's Alerts section mails."""

    def within(self, saved: SavedSearch, first: date, last: date, k: int) -> list[Paper]: ...


class TrendingPapers(Protocol):
    """The trending papers, best first (``FeedService.trending_papers``): "For you" before it knows a
    reader."""

    def trending_papers(self, limit: int) -> list[Paper]: ...


class Upvotes(Protocol):
    """The papers a reader upvoted, newest first (``CommunityService.upvoted_ids``)."""

    def upvoted_ids(self, user_id: int) -> list[str]: ...


class MailedPapers(Protocol):
    """Every paper the reader's digest subscription already mailed them (the digest records): "For
    you" never repeats one."""

    def papers_mailed_to(self, user_id: int) -> set[str]: ...
