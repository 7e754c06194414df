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

import numpy as np
import orjson

from bench.vector_cache import CORPORA, SAMPLES, VectorCache, load_corpus
from paperfeed.adapters.topic_model import SklearnTermCounter
from paperfeed.domain.topics import ctfidf

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


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="arxiv_cats_4k")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", default="", help="run configurations whose name contains this")
    parser.add_argument("--seeds", type=int, default=3, help="k-means seeds averaged")
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
