"""Does ``MiniBatchKMeans`` need several initialisations for the fine topics? ``n_init`` 1 against 3.

Above 50,000 papers ``paperfeed topics build`` clusters with ``MiniBatchKMeans`` (batches of 4,096, fine
k = n / 150 capped at 1,000). scikit-learn runs ``n_init`` k-means++ initialisations on a sample of
``3 * max(batch, k)`` papers, keeps the best by inertia on that sample and then runs the mini-batch
iterations once, so ``n_init`` buys a better start, not a better end by itself. Measured here for each
``n_init``, on the same vectors and seeds:

* **inertia**: the sum of squared distances of every paper to its centre (lower is better);
* **AMI** (adjusted mutual information) against the truth: on the synthetic mixture of ``bench.vector_data``
  the generating sub-topic (300 x 20 centres) and topic (300) of each vector are known (replayed here from
  the same random draws and checked against the generator); on the real ``arxiv_cats_4k`` MiniLM vectors
  (bench vector cache), the arXiv primary category;
* wall and CPU seconds of ``fit_predict``.

    nice -n 19 .venv/bin/python -m bench.topic_kmeans --n 100000 [--seeds 0 1 2] [--real]
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.vector_data import synthetic

I64 = npt.NDArray[np.int64]


def truth(n: int, dim: int = 384, *, topics: int = 300, subtopics: int = 20, seed: int = 0) -> I64:
    """The sub-topic each row of ``synthetic(n, ...)`` was drawn from (its random draws replayed in order)."""
    rng = np.random.default_rng(seed)
    rng.standard_normal((dim, dim))  # rotation
    rng.standard_normal(dim)  # common offset
    rng.standard_normal((topics, dim))  # topic centres
    rng.standard_normal((topics, subtopics, dim))  # sub-topic offsets
    weights = rng.pareto(1.5, topics * subtopics) + 1.0
    return np.asarray(rng.choice(topics * subtopics, size=n, p=weights / weights.sum()), dtype=np.int64)


def _check_truth(seed: int) -> None:
    """The replayed labels are the generator's: each vector is nearest its own sub-topic's mean."""
    n = 20_000
    x, labels = synthetic(n, seed=seed), truth(n, seed=seed)
    present = np.unique(labels)
    means = np.zeros((labels.max() + 1, x.shape[1]), dtype=np.float64)
    np.add.at(means, labels, x)
    means[present] /= np.linalg.norm(means[present], axis=1, keepdims=True)
    big = np.bincount(labels)[labels] >= 20
    own = np.einsum("ij,ij->i", x[big], means[labels[big]])
    other = x[big] @ means[present].T
    hit = (other.max(axis=1) <= own + 1e-6).mean()
    if hit < 0.5:
        raise SystemExit(f"replayed labels do not match the generator ({hit:.2f} nearest their own mean)")


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run(x: npt.NDArray[np.float32], k: int, n_init: int, seed: int) -> tuple[I64, float, float, float]:
    from sklearn.cluster import MiniBatchKMeans

    model = MiniBatchKMeans(n_clusters=k, random_state=seed, n_init=n_init, batch_size=4096)
    t0, c0 = time.perf_counter(), cpu_seconds()
    labels = np.asarray(model.fit_predict(x), dtype=np.int64)
    return labels, float(model.inertia_), time.perf_counter() - t0, cpu_seconds() - c0


def main(argv: list[str] | None = None) -> None:
    from sklearn.metrics import adjusted_mutual_info_score as ami

    from bench.topic_quality import cpu

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="synthetic vectors (0: skip)")
    parser.add_argument("--k", type=int, default=0, help="clusters (default: n / 150 capped at 1,000)")
    parser.add_argument("--n-init", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--real", action="store_true", help="also arxiv_cats_4k's MiniLM vectors")
    args = parser.parse_args(argv)
    print(f"CPU {cpu()}; OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '-')}; nice {os.nice(0)}")
    cases: list[tuple[str, npt.NDArray[np.float32], dict[str, Any]]] = []
    if args.n:
        _check_truth(0)
        sub = truth(args.n)
        cases.append((f"synthetic {args.n:,}", synthetic(args.n), {"sub-topic": sub, "topic": sub // 20}))
    if args.real:
        from bench.topic_quality import primary_categories
        from bench.vector_cache import VectorCache, load_corpus

        corpus = "arxiv_cats_4k"
        category = primary_categories(corpus)
        docs = [d for d in load_corpus(corpus) if d.id in category]
        vectors = VectorCache.default("torch", 1).vectors(corpus, docs)
        cases.append(
            (corpus, np.asarray(vectors, dtype=np.float32), {"category": [category[d.id] for d in docs]})
        )
    for name, x, truths in cases:
        k = args.k or int(min(1000, max(8, round(len(x) / 150))))
        print(f"{name}: k = {k}, batches of 4,096")
        print(
            f"  {'n_init':>6} {'seed':>4} {'inertia':>12} "
            + " ".join(f"{'AMI ' + t:>14}" for t in truths)
            + f" {'wall s':>7} {'CPU s':>7}"
        )
        for n_init in args.n_init:
            for seed in args.seeds:
                labels, inertia, wall, cpu_s = run(x, k, n_init, seed)
                scores = " ".join(f"{ami(t, labels):>14.4f}" for t in truths.values())
                print(
                    f"  {n_init:>6} {seed:>4} {inertia:>12.1f} {scores} {wall:>7.1f} {cpu_s:>7.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
