"""The packaged all-MiniLM-L6-v2 on every backend: loads offline, sane vectors, backends agree."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from paperfeed.adapters.embed.base import resolve_model
from paperfeed.adapters.embed.onnx import OnnxEmbedder, _files, _publish, ensure_onnx
from paperfeed.adapters.embed.sentence_transformers import SentenceTransformerEmbedder

pytestmark = pytest.mark.shared


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1)  # type: ignore[no-any-return]


def test_torch_gives_384_dim_unit_vectors(torch_embedder: SentenceTransformerEmbedder) -> None:
    v = torch_embedder.embed(["Transformers for protein structure prediction.", "x"])
    assert v.shape == (2, 384)
    assert v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert torch_embedder.model_id == "all-MiniLM-L6-v2"
    assert torch_embedder.embed([]).shape == (0, 384)


def test_similar_texts_score_higher_than_unrelated(torch_embedder: SentenceTransformerEmbedder) -> None:
    query, close, far, farther = torch_embedder.embed(
        [
            "convolutional neural networks for image classification",
            "deep CNN models that recognise objects in photographs",
            "a randomized trial of vitamin D supplements in elderly patients",
            "mortgage interest rates and house prices in the eurozone",
        ]
    )
    assert float(query @ close) > 0.5
    assert float(query @ close) > float(query @ far) + 0.3
    assert float(query @ close) > float(query @ farther) + 0.3


def test_onnx_fp32_reproduces_torch(
    torch_embedder: SentenceTransformerEmbedder, onnx_fp32: OnnxEmbedder, real_abstracts: list[str]
) -> None:
    reference = torch_embedder.embed(real_abstracts)
    cos = _cosines(onnx_fp32.embed(real_abstracts), reference)
    # so close that both backends may share one model_id (and one set of stored vectors)
    assert cos.min() >= 0.999, cos


def test_onnx_int8_stays_close_to_torch(
    torch_embedder: SentenceTransformerEmbedder, onnx_int8: OnnxEmbedder, real_abstracts: list[str]
) -> None:
    reference = torch_embedder.embed(real_abstracts)
    vectors = onnx_int8.embed(real_abstracts)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cos = _cosines(vectors, reference)
    assert cos.min() >= 0.97, cos
    assert cos.mean() >= 0.98, cos
    assert onnx_int8.model_id == "all-MiniLM-L6-v2+onnx-int8"


def test_onnx_batch_order_and_padding_do_not_change_vectors(
    onnx_fp32: OnnxEmbedder, real_abstracts: list[str]
) -> None:
    together = onnx_fp32.embed(real_abstracts)
    alone = np.vstack([onnx_fp32.embed([t]) for t in real_abstracts[:3]])
    assert np.allclose(together[:3], alone, atol=1e-5)


def test_export_is_built_once_and_atomically(onnx_fp32: OnnxEmbedder, tmp_path: Path) -> None:
    # a private cache holding only the fp32 export: quantising is the build under test
    fp32 = onnx_fp32.files.folder
    shutil.copytree(fp32, tmp_path / fp32.parent.name / fp32.name)
    files = ensure_onnx(resolve_model(None), tmp_path, quantized=True)
    stamp = os.stat(files.model)
    again = ensure_onnx(resolve_model(None), tmp_path, quantized=True)
    assert again.model == files.model
    assert os.stat(again.model).st_mtime_ns == stamp.st_mtime_ns  # reused, not rebuilt
    assert list(tmp_path.rglob(".tmp-*")) == []
    libraries = fp32.name.removeprefix("fp32-")  # one key for the library versions: this machine's
    assert sorted(p.name for p in files.folder.parent.iterdir()) == [fp32.name, f"int8-{libraries}"]
    assert files.dimension == 384
    assert files.max_length == 256


def test_a_damaged_export_folder_is_replaced_not_trusted(onnx_fp32: OnnxEmbedder, tmp_path: Path) -> None:
    good = onnx_fp32.files.folder
    damaged = tmp_path / "fp32"
    damaged.mkdir()
    (damaged / "model.onnx").write_bytes(b"half a model")  # no meta.json: never finished
    assert _files(damaged) is None
    staged = tmp_path / ".tmp-fp32-1"
    shutil.copytree(good, staged)
    _publish(staged, damaged)
    published = _files(damaged)
    assert published is not None
    assert published.model.stat().st_size == (good / "model.onnx").stat().st_size
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fp32"]


def test_losing_a_build_race_keeps_the_winners_copy(onnx_fp32: OnnxEmbedder, tmp_path: Path) -> None:
    final = tmp_path / "fp32"
    shutil.copytree(onnx_fp32.files.folder, final)
    ours = tmp_path / ".tmp-fp32-2"
    shutil.copytree(onnx_fp32.files.folder, ours)
    before = os.stat(final / "model.onnx").st_ino
    _publish(ours, final)
    assert os.stat(final / "model.onnx").st_ino == before
    assert not ours.exists()
