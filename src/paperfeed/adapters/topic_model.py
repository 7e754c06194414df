"""Topic clustering, the 2-D layout and term counting (the ports of :mod:`paperfeed.domain.topics`).

The measured choice (``bench/topic_quality.py``, docs/topics.md) is k-means on the L2-normalised
embeddings themselves (spherical k-means in effect): it agreed with arXiv's primary categories better than
HDBSCAN with or without a PCA reduction first, and puts every paper in a topic. ``method="hdbscan"``
(leaf selection after a PCA to 10 dimensions) is kept for comparison only. Coarse topics are k-means over
the fine centroids weighted by their sizes.

The layout is UMAP (umap-learn, cosine, seeded: deterministic) fitted on a sample stratified by fine
topic; every other paper sits at the similarity-weighted mean of its nearest fitted papers of the same
fine topic, the rule the daily placement uses too (measured against UMAP's own ``transform`` and PCA in
``bench/topic_build.py``). ``layout="pca"`` keeps the old projection.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from paperfeed.domain.search import Vectors
from paperfeed.domain.topics import Clustering, merge_inflections

__all__ = ["SklearnTermCounter", "SklearnTopicModeller", "knn_place"]

_BLOCK = 8192  # rows per similarity block: bounds memory at a million papers
MINIBATCH_ABOVE = 50_000
MINIBATCH_BATCH = 4096
# One k-means++ start: three cost ~20 % more CPU at 100k papers and k = 667 and gave the same inertia and
# agreement with the true clusters (bench/topic_kmeans.py, docs/topics.md); MiniBatchKMeans iterates from
# the best start only, so more starts buy a start, not a result.
MINIBATCH_N_INIT = 1


Array = npt.NDArray[Any]


def knn_place(anchors: Array, anchor_xy: Array, vectors: Array, neighbours: int) -> Array:
    """Each row of ``vectors`` at the mean of its ``neighbours`` most similar anchors' places, weighted by
    their cosine (clipped at a small positive floor, so opposite anchors never pull)."""
    a = np.asarray(anchors, dtype=np.float32)
    xy = np.asarray(anchor_xy, dtype=np.float64).reshape(-1, 2)
    v = np.asarray(vectors, dtype=np.float32)
    out = np.zeros((len(v), 2), dtype=np.float64)
    if len(a) == 0 or len(v) == 0:
        return out
    m = min(neighbours, len(a))
    for start in range(0, len(v), _BLOCK):
        sims = v[start : start + _BLOCK] @ a.T
        if m < len(a):
            idx = np.argpartition(-sims, m - 1, axis=1)[:, :m]
        else:
            idx = np.broadcast_to(np.arange(len(a)), (len(sims), len(a)))
        w = np.maximum(np.take_along_axis(sims, idx, axis=1), 1e-3).astype(np.float64)
        out[start : start + len(sims)] = (w[:, :, None] * xy[idx]).sum(axis=1) / w.sum(axis=1, keepdims=True)
    return out


def _pca(vectors: Array, seed: int) -> Array:
    from sklearn.decomposition import PCA

    if len(vectors) < 3:
        return np.zeros((len(vectors), 2))
    return np.asarray(PCA(n_components=2, random_state=seed).fit_transform(vectors), dtype=np.float64)


def stratified_sample(groups: Sequence[int], size: int, seed: int) -> Array:
    """At most about ``size`` row indices, each group represented in proportion (at least 5 of it, or all)."""
    g = np.asarray(groups)
    n = len(g)
    if n <= size:
        return np.arange(n)
    rng = np.random.default_rng(seed)
    picked: list[Any] = []
    for c in np.unique(g):
        rows = np.flatnonzero(g == c)
        take = min(len(rows), max(5, round(size * len(rows) / n)))
        picked.append(np.sort(rng.choice(rows, take, replace=False)))
    return np.sort(np.concatenate(picked))


class SklearnTopicModeller:
    """:class:`~paperfeed.domain.topics.TopicModeller`: k-means (default) or HDBSCAN; a UMAP layout."""

    def __init__(
        self,
        method: str,
        *,
        layout: str,
        pca: int = 10,
        min_cluster_size: int = 10,
        umap_neighbours: int = 15,
        umap_min_dist: float = 0.1,
        minibatch_above: int = MINIBATCH_ABOVE,
    ) -> None:
        if method not in ("kmeans", "hdbscan"):
            raise ValueError(f"unknown topic clustering {method!r} (known: kmeans, hdbscan)")
        if layout not in ("umap", "pca"):
            raise ValueError(f"unknown topic layout {layout!r} (known: umap, pca)")
        self.method, self.layout_method = method, layout
        self.pca, self.min_cluster_size = pca, min_cluster_size
        self.umap_neighbours, self.umap_min_dist = umap_neighbours, umap_min_dist
        self.minibatch_above = minibatch_above  # above this many papers k-means runs in mini-batches

    def cluster(self, vectors: Vectors, k: int, *, seed: int) -> Clustering:
        x = np.asarray(vectors, dtype=np.float32)
        if self.method == "kmeans":
            return Clustering(self._kmeans(x, k, seed), self._kmeans_name(len(x), k, seed))
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
        return Clustering([int(v) for v in labels], desc)

    def coarsen(self, centroids: Vectors, sizes: Sequence[int], k: int, *, seed: int) -> list[int]:
        from sklearn.cluster import KMeans

        c = np.asarray(centroids, dtype=np.float32)
        if k >= len(c):
            return list(range(len(c)))
        model = KMeans(n_clusters=k, random_state=seed, n_init=4)
        return [int(v) for v in model.fit_predict(c, sample_weight=np.asarray(sizes, dtype=np.float64))]

    def layout(
        self, vectors: Vectors, groups: Sequence[int], *, seed: int, sample: int, neighbours: int
    ) -> Vectors:
        x = np.asarray(vectors, dtype=np.float32)
        if self.layout_method == "pca" or len(x) < 2 * self.umap_neighbours:
            return _pca(x, seed).astype(np.float32)  # UMAP needs more neighbours than a handful have
        fit = stratified_sample(groups, sample, seed)
        xy = np.zeros((len(x), 2), dtype=np.float64)
        xy[fit] = self._umap(x[fit], seed)
        rest = np.ones(len(x), dtype=bool)
        rest[fit] = False
        if not rest.any():
            return xy.astype(np.float32)
        g = np.asarray(groups)
        for c in np.unique(g[rest]):
            todo = np.flatnonzero(rest & (g == c))
            near = fit[g[fit] == c]
            if len(near) == 0:  # cannot happen with a stratified sample; all fitted papers then
                near = fit
            xy[todo] = knn_place(x[near], xy[near], x[todo], neighbours)
        return xy.astype(np.float32)

    def place(self, anchors: Vectors, anchor_xy: Vectors, vectors: Vectors, *, neighbours: int) -> Vectors:
        return knn_place(anchors, anchor_xy, vectors, neighbours).astype(np.float32)

    def _umap(self, x: Array, seed: int) -> Array:
        import warnings

        # umap warns on import (no TensorFlow for ParametricUMAP), on a seed (single-threaded then) and on
        # disconnected components: none is news here
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from umap import UMAP  # type: ignore[import-untyped]

            model = UMAP(
                n_neighbors=min(self.umap_neighbours, len(x) - 1),
                min_dist=self.umap_min_dist,
                metric="cosine",
                random_state=seed,  # deterministic (and single-threaded)
                n_jobs=1,
            )
            xy: Array = np.asarray(model.fit_transform(x), dtype=np.float64)
        return xy

    def _kmeans_name(self, n: int, k: int, seed: int) -> str:
        if n > self.minibatch_above:
            return f"minibatch-kmeans k={k} n_init={MINIBATCH_N_INIT} seed={seed}"
        return f"kmeans k={k} seed={seed}"

    def _kmeans(self, x: Vectors, k: int, seed: int) -> list[int]:
        from sklearn.cluster import KMeans, MiniBatchKMeans

        model: Any
        if len(x) > self.minibatch_above:  # full k-means passes grow with n x k; mini-batches keep it fast
            model = MiniBatchKMeans(
                n_clusters=k, random_state=seed, n_init=MINIBATCH_N_INIT, batch_size=MINIBATCH_BATCH
            )
        else:
            model = KMeans(n_clusters=k, random_state=seed, n_init=1)
        return [int(v) for v in model.fit_predict(x)]


# What an English plural ends with (models, analyses, data, criteria, radii, children, formulae): only such
# words are asked for a singular, which keeps inflect's ~160 µs a word off the other four fifths of them
_PLURAL_ENDINGS = ("s", "a", "i", "en", "ae", "ice", "eese", "eet", "eeth")


class Singulars:
    """A word's singular by `inflect <https://pypi.org/project/inflect/>`_ (its ``singular_noun``: regular
    and irregular plurals, and the acronyms of this field's papers, ``llms`` → ``llm``), or None.

    Why inflect: a stemmer (Snowball) also merges words that are no inflection of each other (computer,
    computation → ``comput``), and a dictionary lemmatiser (simplemma) knows no ``llms`` or ``gnns``.
    inflect's guesses for a singular noun ending in s (``bias`` → ``bia``) merge nothing, since
    :func:`~paperfeed.domain.topics.merge_inflections` only merges into a singular the texts use too. Of
    a hyphenated word only the last part is a plural (``vision-language-models``), and inflect is asked
    about that part alone (it mangles some compounds whole).
    """

    def __init__(self) -> None:
        import inflect

        self.engine = inflect.engine()
        self.known: dict[str, str | None] = {}

    def __call__(self, word: str) -> str | None:
        if word in self.known:
            return self.known[word]
        head, dash, last = word.rpartition("-")
        found: str | None = None
        if len(last) > 2 and last.endswith(_PLURAL_ENDINGS):
            single = self.engine.singular_noun(last)
            if isinstance(single, str) and single and single != last:
                found = head + dash + single
        self.known[word] = found
        return found


class SklearnTermCounter:
    """:class:`~paperfeed.domain.topics.TermCounter`: ``CountVectorizer``, English stop words, 1-2 grams;
    a word's singular and plural counted as one term (:class:`Singulars`)."""

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
        return merge_inflections(out, Singulars())
