"""The ranking metrics the search benches report (bench/ir_metrics.py), on hand-computed cases."""

from __future__ import annotations

import math

import pytest
from bench.ir_metrics import evaluate, mrr_at_k, ndcg_at_k, recall_at_k


def test_ndcg() -> None:
    assert ndcg_at_k(["a", "b"], {"a": 1}, 10) == 1.0
    assert ndcg_at_k(["x", "a"], {"a": 1}, 10) == pytest.approx(1 / math.log2(3))
    assert ndcg_at_k(["x", "a"], {"a": 1}, 1) == 0.0
    # graded: the ideal order puts the rel-2 document first
    assert ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, 10) == pytest.approx(
        (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    )


def test_recall_and_mrr() -> None:
    assert recall_at_k(["x", "a"], {"a": 1, "b": 1}, 1) == 0.0
    assert recall_at_k(["x", "a"], {"a": 1, "b": 1}, 2) == 0.5
    assert mrr_at_k(["x", "y", "a"], {"a": 1}, 10) == pytest.approx(1 / 3)
    assert mrr_at_k(["x", "y", "a"], {"a": 1}, 2) == 0.0


def test_evaluate_counts_missing_queries_as_zero_and_skips_unjudged() -> None:
    out = evaluate({"q": ["a"]}, {"q": {"a": 1}, "r": {"b": 1}, "s": {"c": 0}}, ks=(10,))
    assert out["queries"] == 2
    assert out["ndcg@10"] == 0.5
    assert out["recall@10"] == 0.5
