"""The clustering adapter's large-store path (MiniBatchKMeans) on a small threshold, so it runs in a test."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import adjusted_mutual_info_score

from tests.support.defaults import topic_modeller


def test_above_the_threshold_minibatch_kmeans_with_one_start_finds_clear_groups() -> None:
    rng = np.random.default_rng(0)
    centres = np.eye(16, dtype=np.float32)[:4]
    truth = np.repeat(np.arange(4), 150)
    x = centres[truth] + rng.normal(0, 0.05, (len(truth), 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)

    big = topic_modeller(minibatch_above=500).cluster(x, 4, seed=0)
    assert big.method == "minibatch-kmeans k=4 n_init=1 seed=0"
    assert adjusted_mutual_info_score(truth, big.labels) == 1.0

    small = topic_modeller().cluster(x, 4, seed=0)  # 600 papers: below the default 50,000
    assert small.method == "kmeans k=4 seed=0"
    assert adjusted_mutual_info_score(truth, small.labels) == 1.0
