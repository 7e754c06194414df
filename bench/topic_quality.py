"""Topic quality on real data (issue #17): which clustering makes the topics.

On ``arxiv_cats_4k`` (4,000 arXiv papers with their primary categories; vectors from the bench cache, see
``bench/vector_cache.py``) each configuration is scored by

* **AMI**: adjusted mutual information between the clusters and the arXiv primary categories (HDBSCAN's
  noise counts as one more cluster, so leaving papers out is not free), and AMI over the clustered papers
  only;
* **NPMI coherence**: for each topic its 10 top unigrams by c-TF-IDF (the labels paperfeed shows), the
  mean normalised PMI of every pair of them over the abstracts (document co-occurrence; a pair never seen
  together scores -1), averaged over topics;
* the share of papers left as noise, the number of topics and the seconds taken.

    nice -n 10 .venv/bin/python -m bench.topic_quality [--corpus arxiv_cats_4k] [--threads 1]

``--coarse`` scores the coarse level instead: the fine k-means (k = n / 150) grouped by k-means over the
fine centroids weighted by their sizes (what ``paperfeed topics build`` does), for several coarse k,
against arXiv's top-level groups (cs, math, physics, stat, eess, q-bio, q-fin, econ) and against the
primary categories; NPMI of the coarse topics' words (the fine topics' term counts summed).

``--layout`` scores the 2-D layout instead: trustworthiness (scikit-learn, 10 neighbours, cosine in the
embedding space) of PCA, UMAP on every paper, and UMAP fitted on a half sample with the rest placed by
``paperfeed``'s nearest-fitted-neighbours rule or by UMAP's own ``transform``, with the seconds each took.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import math
import os
import platform
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import orjson

from bench.vector_cache import CORPORA, SAMPLES, VectorCache, load_corpus
from paperfeed.adapters.topic_model import SklearnTermCounter
from paperfeed.domain.topics import ctfidf
from paperfeed.settings_model import SettingsModel

if TYPE_CHECKING:
    from paperfeed.adapters.topic_model import SklearnTopicModeller


def shipped_modeller() -> SklearnTopicModeller:
    """The clustering and layout an instance runs (``PAPERFEED_TOPICS_METHOD``, ``_LAYOUT``)."""
    from paperfeed.adapters.topic_model import SklearnTopicModeller

    s = SettingsModel()
    return SklearnTopicModeller(s.topics_method, layout=s.topics_layout)


TOKEN = re.compile(r"[a-z][a-z0-9-]+")


def cpu() -> str:
    model, flags = platform.processor() or "?", ""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        model = re.search(r"model name\s*:\s*(.*)", text).group(1)  # type: ignore[union-attr]
        have = set(re.search(r"flags\s*:\s*(.*)", text).group(1).split())  # type: ignore[union-attr]
        flags = " ".join(sorted(f for f in have if f == "avx2" or f.startswith("avx512")))
    except (OSError, AttributeError):
        pass
    return f"{model} ({os.cpu_count()} cores; {flags or 'no avx2/avx512'})"


def primary_categories(corpus: str) -> dict[str, str]:
    base = SAMPLES[corpus][0] if corpus in SAMPLES else corpus
    out: dict[str, str] = {}
    with gzip.open(CORPORA[base], "rb") as f:
        for line in f:
            rec = orjson.loads(line)
            cats = rec.get("categories") or []
            primary = rec.get("primary_category") or (cats[0] if cats else None)
            if primary:
                out[str(rec["id"])] = str(primary)
    return out


def npmi(top_words: Sequence[Sequence[str]], docs: Sequence[set[str]]) -> float:
    """Mean over topics of the mean NPMI of each pair of a topic's top words (document co-occurrence)."""
    n = len(docs)
    vocab = {w for words in top_words for w in words}
    where: dict[str, set[int]] = {w: set() for w in vocab}
    for i, d in enumerate(docs):
        for w in d & vocab:
            where[w].add(i)
    scores: list[float] = []
    for words in top_words:
        pairs = []
        for a, b in itertools.combinations(words, 2):
            joint = len(where[a] & where[b])
            if joint == 0:
                pairs.append(-1.0)
                continue
            pj, pa, pb = joint / n, len(where[a]) / n, len(where[b]) / n
            pairs.append(1.0 if pj == 1 else math.log(pj / (pa * pb)) / -math.log(pj))
        if pairs:
            scores.append(sum(pairs) / len(pairs))
    return sum(scores) / len(scores) if scores else float("nan")


def run(
    name: str, labels: np.ndarray, texts: list[str], docs: list[set[str]], cats: list[str]
) -> dict[str, float]:
    from sklearn.metrics import adjusted_mutual_info_score

    clusters = sorted(set(labels.tolist()) - {-1})
    groups = [[texts[i] for i in np.flatnonzero(labels == c)] for c in clusters]
    unigram = SklearnTermCounter()
    counts = unigram.count(groups)
    counts = [type(c)({t: n for t, n in c.items() if " " not in t}) for c in counts]
    top = [[t for t, _ in words] for words in ctfidf(counts, 10)]
    kept = labels != -1
    return {
        "topics": len(clusters),
        "noise": float(1 - kept.mean()),
        "ami": float(adjusted_mutual_info_score(cats, labels)),
        "ami_clustered": float(adjusted_mutual_info_score(np.array(cats)[kept], labels[kept]))
        if kept.any()
        else 0,
        "npmi": npmi(top, docs),
    }


GROUPS = ("cs", "math", "stat", "eess", "econ", "q-bio", "q-fin")  # every other archive is physics


def group_of(category: str) -> str:
    """arXiv's top-level group of a primary category (``hep-th`` -> physics, ``cs.LG`` -> cs)."""
    archive = category.split(".")[0]
    return archive if archive in GROUPS else "physics"


def coarse_runs(
    vectors: np.ndarray, texts: list[str], docs: list[set[str]], cats: list[str], seeds: int
) -> None:
    from collections import Counter

    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_mutual_info_score

    groups = [group_of(c) for c in cats]
    fine_k = len(texts) // 150
    print(f"top-level groups: {dict(Counter(groups).most_common())}; fine k = {fine_k}")
    print(f"{'coarse configuration':34} {'topics':>6} {'AMI grp':>7} {'AMI cat':>7} {'NPMI':>7}")
    unigram = SklearnTermCounter()
    modeller = shipped_modeller()
    rows: dict[str, list[tuple[float, float, float, int]]] = {}
    for seed in range(seeds):
        fine = KMeans(n_clusters=fine_k, random_state=seed, n_init=1).fit_predict(vectors)
        sizes = np.bincount(fine, minlength=fine_k)
        centroids = np.vstack([vectors[fine == j].mean(axis=0) for j in range(fine_k)])
        centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
        counts = unigram.count([[texts[i] for i in np.flatnonzero(fine == j)] for j in range(fine_k)])
        counts = [type(c)({t: n for t, n in c.items() if " " not in t}) for c in counts]
        options = [(f"fine k={fine_k} (no coarse level)", list(range(fine_k)))]
        for k in (2, 3, 4, 6, 8, 12):
            parent = modeller.coarsen(centroids, sizes.tolist(), k, seed=seed)
            options.append((f"coarse k={k} (fine/coarse={fine_k / k:.1f})", parent))
        direct = {k: KMeans(n_clusters=k, random_state=seed, n_init=1).fit_predict(vectors) for k in (4, 8)}
        for name, parent in options:
            labels = np.asarray(parent)[fine]
            summed: list[Counter[str]] = [Counter() for _ in range(max(parent) + 1)]
            for j, c in enumerate(counts):
                summed[parent[j]].update(c)
            top = [[t for t, _ in words] for words in ctfidf(summed, 10)]
            rows.setdefault(name, []).append(
                (
                    float(adjusted_mutual_info_score(groups, labels)),
                    float(adjusted_mutual_info_score(cats, labels)),
                    npmi(top, docs),
                    max(parent) + 1,
                )
            )
        for k, labels in direct.items():
            clusters = sorted(set(labels.tolist()))
            counted = unigram.count([[texts[i] for i in np.flatnonzero(labels == c)] for c in clusters])
            summed = [type(c)({t: n for t, n in c.items() if " " not in t}) for c in counted]
            top = [[t for t, _ in words] for words in ctfidf(summed, 10)]
            rows.setdefault(f"direct kmeans k={k} on papers", []).append(
                (
                    float(adjusted_mutual_info_score(groups, labels)),
                    float(adjusted_mutual_info_score(cats, labels)),
                    npmi(top, docs),
                    k,
                )
            )
    for name, results in rows.items():
        mean = np.mean(np.asarray(results), axis=0)
        print(f"{name:34} {mean[3]:6.0f} {mean[0]:7.3f} {mean[1]:7.3f} {mean[2]:7.3f}", flush=True)


def layout_runs(vectors: np.ndarray, sample: int) -> None:
    import warnings

    from sklearn.cluster import KMeans
    from sklearn.decomposition import PCA
    from sklearn.manifold import trustworthiness

    from paperfeed.adapters.topic_model import knn_place, stratified_sample

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from umap import UMAP  # type: ignore[import-untyped]

    fine = KMeans(n_clusters=len(vectors) // 150, random_state=0, n_init=1).fit_predict(vectors)
    fit = stratified_sample(fine.tolist(), sample, 0)
    rest = np.setdiff1d(np.arange(len(vectors)), fit)

    def umap() -> object:
        return UMAP(n_neighbors=15, min_dist=0.1, metric="cosine", random_state=0, n_jobs=1)

    def with_transform() -> np.ndarray:
        model = umap()
        xy = np.zeros((len(vectors), 2))
        xy[fit] = model.fit_transform(vectors[fit])  # type: ignore[attr-defined]
        xy[rest] = model.transform(vectors[rest])  # type: ignore[attr-defined]
        return xy

    def with_knn() -> np.ndarray:
        return np.asarray(
            shipped_modeller().layout(vectors, fine.tolist(), seed=0, sample=sample, neighbours=10)
        )

    def global_knn() -> np.ndarray:
        xy = np.zeros((len(vectors), 2))
        xy[fit] = umap().fit_transform(vectors[fit])  # type: ignore[attr-defined]
        xy[rest] = knn_place(vectors[fit], xy[fit], vectors[rest], 10)
        return xy

    configs = {
        "pca": lambda: PCA(n_components=2, random_state=0).fit_transform(vectors),
        "umap, every paper fitted": lambda: umap().fit_transform(vectors),  # type: ignore[attr-defined]
        f"umap on {len(fit)}, rest: same-topic knn": with_knn,
        f"umap on {len(fit)}, rest: any-topic knn": global_knn,
        f"umap on {len(fit)}, rest: umap transform": with_transform,
    }
    print(f"{'layout':42} {'trust@10':>8} {'s':>7}")
    for name, make in configs.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            started = time.perf_counter()
            xy = np.asarray(make())
            seconds = time.perf_counter() - started
        t = trustworthiness(vectors, xy, n_neighbors=10, metric="cosine")
        print(f"{name:42} {t:8.3f} {seconds:7.1f}", flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="arxiv_cats_4k")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", default="", help="run configurations whose name contains this")
    parser.add_argument("--seeds", type=int, default=3, help="k-means seeds averaged")
    parser.add_argument("--coarse", action="store_true", help="score the coarse level instead")
    parser.add_argument("--layout", type=int, default=0, help="score the 2-D layout, fitted on this many")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    from sklearn.cluster import HDBSCAN, KMeans
    from sklearn.decomposition import PCA

    category = primary_categories(args.corpus)
    all_docs = [d for d in load_corpus(args.corpus) if d.id in category]
    vectors = VectorCache.default("torch", args.threads).vectors(args.corpus, all_docs)
    cats = [category[d.id] for d in all_docs]
    texts = [f"{d.title}. {d.abstract}" for d in all_docs]
    docs = [set(TOKEN.findall(t.lower())) for t in texts]
    n_cats = len(set(cats))
    print(f"{args.corpus}: {len(all_docs):,} papers, {n_cats} primary categories; CPU {cpu()}")
    if args.layout:
        layout_runs(np.asarray(vectors, dtype=np.float32), args.layout)
        return
    if args.coarse:
        coarse_runs(np.asarray(vectors, dtype=np.float32), texts, docs, cats, args.seeds)
        return
    pca50 = PCA(n_components=50, random_state=0).fit_transform(vectors)

    configs: list[tuple[str, tuple[str, np.ndarray, int]]] = []
    for k in (n_cats, len(all_docs) // 150, 40, 80):
        configs.append((f"kmeans k={k}", ("kmeans", vectors, k)))
    configs.append((f"kmeans k={len(all_docs) // 150} on pca50", ("kmeans", pca50, len(all_docs) // 150)))
    for mcs in (10, 25, 50):
        configs.append((f"hdbscan mcs={mcs} on pca50", ("hdbscan", pca50, mcs)))
    for dims in (5, 10):  # HDBSCAN wants few dimensions (BERTopic gives it UMAP to 5); PCA is the stand-in
        low = PCA(n_components=dims, random_state=0).fit_transform(vectors)
        for mcs in (10, 25):
            configs.append((f"hdbscan mcs={mcs} on pca{dims}", ("hdbscan", low, mcs)))
        for mcs in (10, 20, 40):  # leaf selection: many small clusters instead of the few biggest
            configs.append((f"hdbscan-leaf mcs={mcs} on pca{dims}", ("hdbscan-leaf", low, mcs)))
    configs.append(("hdbscan mcs=25 on full 384-d", ("hdbscan", vectors, 25)))

    print(f"{'configuration':34} {'topics':>6} {'noise':>6} {'AMI':>6} {'AMI*':>6} {'NPMI':>7} {'s':>6}")
    for name, (kind, x, p) in configs:
        if args.only not in name:
            continue
        results: list[dict[str, float]] = []
        started = time.perf_counter()
        for seed in range(args.seeds if kind == "kmeans" else 1):
            if kind == "kmeans":
                labels = KMeans(n_clusters=p, random_state=seed, n_init=1).fit_predict(x)
            else:
                leaf = "leaf" if kind == "hdbscan-leaf" else "eom"
                model = HDBSCAN(min_cluster_size=p, min_samples=5, cluster_selection_method=leaf, copy=True)
                labels = model.fit_predict(x)
            results.append(run(name, np.asarray(labels), texts, docs, cats))
        seconds = (time.perf_counter() - started) / len(results)
        mean = {key: sum(r[key] for r in results) / len(results) for key in results[0]}
        print(
            f"{name:34} {mean['topics']:6.0f} {mean['noise']:6.1%} {mean['ami']:6.3f} "
            f"{mean['ami_clustered']:6.3f} {mean['npmi']:7.3f} {seconds:6.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
