"""Real-model fixtures, loaded once per session: the packaged all-MiniLM-L6-v2 and its ONNX exports."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import orjson
import pytest

from paperfeed.adapters.embed.base import resolve_model
from paperfeed.adapters.embed.onnx import OnnxEmbedder
from paperfeed.adapters.embed.sentence_transformers import SentenceTransformerEmbedder
from paperfeed.domain.embedding import embedding_text


@pytest.fixture(scope="session")
def torch_embedder() -> SentenceTransformerEmbedder:
    embedder = SentenceTransformerEmbedder(resolve_model(None))
    assert embedder.dimension == 384  # loads the model once for the whole session
    return embedder


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ONNX export per test run, shared by xdist workers (a lost build race keeps the winner's copy)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # this run's folder, above each worker's own
    folder = base / "onnx-models"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def onnx_fp32(model_cache: Path) -> OnnxEmbedder:
    return OnnxEmbedder(resolve_model(None), model_cache, quantized=False)


@pytest.fixture(scope="session")
def onnx_int8(model_cache: Path) -> OnnxEmbedder:
    return OnnxEmbedder(resolve_model(None), model_cache, quantized=True)


@pytest.fixture(scope="session")
def real_abstracts(shared_dir: Path) -> list[str]:
    """Eight real SciFact abstracts of varied length (two longer than the 256-token window)."""
    texts: list[str] = []
    with gzip.open(shared_dir / "data" / "scifact_corpus.jsonl.gz", "rb") as f:
        for line in f:
            doc = orjson.loads(line)
            texts.append(embedding_text(doc["title"], doc["abstract"]))
            if len(texts) == 40:
                break
    texts.sort(key=len)
    return texts[::5]
