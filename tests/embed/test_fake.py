from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from paperfeed.adapters.embed import open_embedder
from paperfeed.adapters.embed.fake import FakeEmbedder
from tests.support.defaults import embedder_config


def test_vectors_are_unit_float32_and_deterministic() -> None:
    e = FakeEmbedder(32)
    texts = ["graph neural networks", "", "!!!", "a b c"]
    v = e.embed(texts)
    assert v.shape == (4, 32)
    assert v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)
    assert np.array_equal(v, FakeEmbedder(32).embed(texts))


def test_similar_texts_are_closer_than_unrelated_ones() -> None:
    e = FakeEmbedder(256)
    a, b, c = e.embed(
        [
            "graph neural networks for molecule property prediction",
            "molecule property prediction with graph neural networks and attention",
            "the housing market in rural ireland after the famine",
        ]
    )
    assert float(a @ b) > 0.7
    assert float(a @ b) > float(a @ c) + 0.4


def test_names_make_separate_vector_spaces() -> None:
    one, other = FakeEmbedder(64, name="fake"), FakeEmbedder(64, name="other")
    assert one.model_id == "fake-hash64" != other.model_id == "other-hash64"
    text = ["sparse attention for long documents"]
    assert float(one.embed(text)[0] @ other.embed(text)[0]) < 0.9


def test_registered_like_the_real_backends(tmp_path: Path) -> None:
    e = open_embedder(embedder_config(tmp_path, backend="fake", model="demo", fake_dimension=16))
    assert (e.model_id, e.dimension) == ("demo-hash16", 16)
    assert e.embed(["x"]).shape == (1, 16)


def test_dimension_must_be_useful() -> None:
    with pytest.raises(ValueError, match="dimension"):
        FakeEmbedder(1)
