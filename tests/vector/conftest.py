"""Fixtures: the synthetic corpus and an index factory parametrised over every implementation."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from paperfeed.adapters.vector import StoredVectorIndex
from tests.vector.corpus import DIM, MODEL, Corpus, make_corpus

# "hnsw-graph" forces every filtered query through the graph walk (never the small-filter brute force), so the
# graph's own filtering and its fall-back are held to the same contract.
VARIANTS: dict[str, dict[str, Any]] = {
    "exact": {"policy": "exact"},
    "hnsw": {"policy": "hnsw"},
    "hnsw-graph": {"policy": "hnsw", "brute_force_share": 0.0},
}

Opener = Callable[..., StoredVectorIndex]


@pytest.fixture(scope="session")
def corpus() -> Corpus:
    return make_corpus(3000)


@pytest.fixture(params=sorted(VARIANTS))
def variant(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def open_index(variant: str, tmp_path: Path) -> Opener:
    """``open_index(path=None, model_id=MODEL, dimension=DIM)`` for the current variant."""

    def opener(path: Path | None = None, *, model_id: str = MODEL, dimension: int = DIM) -> StoredVectorIndex:
        return StoredVectorIndex(
            path or tmp_path / "vectors", model_id=model_id, dimension=dimension, **VARIANTS[variant]
        )

    return opener


@pytest.fixture(scope="session")
def saved_corpora(tmp_path_factory: pytest.TempPathFactory, corpus: Corpus) -> dict[str, Path]:
    """The corpus indexed and saved once per variant; tests get a private copy (building is the slow part)."""
    out = {}
    for name, options in VARIANTS.items():
        path = tmp_path_factory.mktemp(name) / "vectors"
        index = StoredVectorIndex(path, model_id=MODEL, dimension=DIM, **options)
        index.upsert(corpus.records)
        index.save()
        out[name] = path
    return out


@pytest.fixture
def filled(
    open_index: Opener, variant: str, saved_corpora: dict[str, Path], tmp_path: Path
) -> StoredVectorIndex:
    """A private, already saved index of the 3000-paper corpus."""
    shutil.copytree(saved_corpora[variant], tmp_path / "vectors")
    return open_index(tmp_path / "vectors")
