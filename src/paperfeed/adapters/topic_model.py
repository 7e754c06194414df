"""Topic clustering and term counting with scikit-learn (the ports of :mod:`paperfeed.domain.topics`).

The measured choice (``bench/topic_quality.py``, docs/topics.md) is k-means on the L2-normalised
embeddings themselves (spherical k-means in effect): it agreed with arXiv's primary categories better than
HDBSCAN with or without a PCA reduction first, and puts every paper in a topic (HDBSCAN without a
UMAP reduction finds two or three clusters, or with leaf selection leaves ~90 % of the papers as noise).
``method="hdbscan"`` (leaf selection after a PCA to 10 dimensions) is kept for comparison only. The
2-D layout is a PCA projection: cheap and deterministic; the interactive map (not built yet) will want
a UMAP-like layout.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from paperfeed.domain.search import Vectors
from paperfeed.domain.topics import Clustering

__all__ = ["SklearnTermCounter", "SklearnTopicModeller"]


def _layout(vectors: Vectors, seed: int) -> list[tuple[float, float]]:
    from sklearn.decomposition import PCA

    if len(vectors) < 3:
        return [(0.0, 0.0)] * len(vectors)
    xy = PCA(n_components=2, random_state=seed).fit_transform(vectors)
    return [(float(x), float(y)) for x, y in xy]


class SklearnTopicModeller:
    """:class:`~paperfeed.domain.topics.TopicModeller`: k-means (default) or HDBSCAN after PCA."""

    def __init__(self, method: str = "kmeans", *, pca: int = 10, min_cluster_size: int = 10) -> None:
        if method not in ("kmeans", "hdbscan"):
            raise ValueError(f"unknown topic clustering {method!r} (known: kmeans, hdbscan)")
        self.method, self.pca, self.min_cluster_size = method, pca, min_cluster_size

    def cluster(self, vectors: Vectors, k: int, *, seed: int) -> Clustering:
        x = np.asarray(vectors, dtype=np.float32)
        coords = _layout(x, seed)
        if self.method == "kmeans":
            return Clustering(self._kmeans(x, k, seed), coords, f"kmeans k={k} seed={seed}")
        from sklearn.cluster import HDBSCAN
        from sklearn.decomposition import PCA

        reduced = (
            PCA(n_components=min(self.pca, *x.shape), random_state=seed).fit_transform(x) if self.pca else x
        )
        model = HDBSCAN(
            min_cluster_size=self.min_cluster_size, min_samples=5, cluster_selection_method="leaf", copy=True
        )
        labels = model.fit_predict(reduced)
        desc = f"hdbscan leaf min_cluster_size={self.min_cluster_size} pca={self.pca}"
        return Clustering([int(v) for v in labels], coords, desc)

    @staticmethod
    def _kmeans(x: Vectors, k: int, seed: int) -> list[int]:
        from sklearn.cluster import KMeans, MiniBatchKMeans

        model: Any
        if len(x) > 50_000:  # full k-means passes grow with n x k; mini-batches keep big stores in minutes
            model = MiniBatchKMeans(n_clusters=k, random_state=seed, n_init=3, batch_size=4096)
        else:
            model = KMeans(n_clusters=k, random_state=seed, n_init=1)
        return [int(v) for v in model.fit_predict(x)]


class SklearnTermCounter:
    """:class:`~paperfeed.domain.topics.TermCounter`: ``CountVectorizer``, English stop words, 1-2 grams."""

    def __init__(self, *, min_df: int = 2, max_features: int = 50_000) -> None:
        self.min_df, self.max_features = min_df, max_features

    def count(self, groups: Sequence[Sequence[str]]) -> list[Counter[str]]:
        from sklearn.feature_extraction.text import CountVectorizer

        docs = [text for group in groups for text in group]
        if not docs:
            return [Counter() for _ in groups]
        vectorizer = CountVectorizer(
            stop_words="english",
            ngram_range=(1, 2),
            min_df=min(self.min_df, len(docs)),
            max_features=self.max_features,
            token_pattern=r"(?u)\b[a-zA-Z][a-zA-Z0-9-]+\b",
        )
        try:
            matrix = vectorizer.fit_transform(docs)
        except ValueError:  # nothing but stop words
            return [Counter() for _ in groups]
        vocab = vectorizer.get_feature_names_out()
        out: list[Counter[str]] = []
        start = 0
        for group in groups:
            rows = matrix[start : start + len(group)]
            start += len(group)
            sums = np.asarray(rows.sum(axis=0)).ravel()
            nz = np.flatnonzero(sums)
            out.append(Counter({str(vocab[i]): int(sums[i]) for i in nz}))
        return out
