from __future__ import annotations

from pathlib import Path

import pytest

from paperfeed.adapters.embed import open_embedder, resolve_model
from paperfeed.adapters.embed.base import PACKAGED_MODEL_NAME
from paperfeed.domain.errors import EmbedderUnavailable
from tests.support.defaults import embedder_config


def test_model_ids_separate_backends_whose_vectors_differ(tmp_path: Path) -> None:
    def model_id(backend: str) -> str:
        return open_embedder(embedder_config(tmp_path, backend=backend, cache_dir=tmp_path)).model_id

    assert model_id("torch") == "all-MiniLM-L6-v2"
    assert model_id("onnx") == "all-MiniLM-L6-v2"  # same vectors to ~1e-7 (checked in test_real_model)
    assert model_id("onnx-int8") == "all-MiniLM-L6-v2+onnx-int8"
    assert model_id("fake") == "fake-hash64"
    assert not list(tmp_path.iterdir()), "building an embedder must not load or export anything yet"


def test_unknown_backend_is_named(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match=r"unknown embedding backend 'tensorflow' \(choose one of"):
        open_embedder(embedder_config(tmp_path, backend="tensorflow"))


def test_bf16_is_for_torch_only(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match="torch backend only"):
        open_embedder(embedder_config(tmp_path, backend="onnx", bf16=True))


def test_default_model_is_the_packaged_folder() -> None:
    source = resolve_model(None)
    assert source.name == PACKAGED_MODEL_NAME
    assert source.path is not None
    assert (source.path / "model.safetensors").is_file()


def test_model_folder_keeps_its_name(tmp_path: Path) -> None:
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    assert resolve_model(str(folder)).name == "my-model"
    (tmp_path / "empty").mkdir()
    with pytest.raises(EmbedderUnavailable, match="not a model folder"):
        resolve_model(str(tmp_path / "empty"))


def test_missing_folder_is_reported(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match="no such model folder"):
        resolve_model(str(tmp_path / "nope"))


def test_hub_name_not_in_the_cache_fails_offline_with_a_clear_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache: nothing to load, nothing to fetch
    source = resolve_model("paperfeed-test/not-a-model")
    assert (source.name, source.path) == ("not-a-model", None)
    embedder = open_embedder(embedder_config(tmp_path, backend="onnx", model=source.spec, cache_dir=tmp_path))
    with pytest.raises(EmbedderUnavailable, match="not in the local Hugging Face cache"):
        embedder.embed(["x"])
