"""The clustering adapter's large-store path (MiniBatchKMeans) on a small threshold, so it runs in a test."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import adjusted_mutual_info_score

from paperfeed.adapters.topic_model import SklearnTermCounter
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


def test_the_term_counter_counts_a_words_singular_and_plural_as_one() -> None:
    """Real inflect on real phrasing: plurals (regular, irregular, an acronym's, a hyphenated word's last
    part) merge into the form the texts use most; a singular noun ending in s is left whole."""
    texts = [
        "Large language models as agents: an agent and its LLMs",
        "Language models and one language model; LLMs beside an LLM",
        "Vision-language models and a vision-language model under bias",
        "Biases of the analyses; one analysis of the data and a datum",
    ]
    (counts,) = SklearnTermCounter(min_df=1).count([texts])
    words = {w for term in counts for w in term.split()}
    assert {"models", "agent", "llms", "vision-language"} <= words
    assert not {"model", "agents", "llm"} & words  # merged into the more used form
    assert (counts["models"], counts["llms"], counts["agent"]) == (5, 3, 2)
    assert counts["language models"] == 3  # "language model" counted with it
    assert "bias" in words  # biases → bias, which occurs
    assert "biases" not in words
    assert "analysis" in words or "analyses" in words
    assert not ({"analysis", "analyses"} <= words)
    assert not {"bia", "analysi"} & words  # no made-up singular is ever shown
