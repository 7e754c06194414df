"""The manifest the embedder factory reads: it names the adopted model, applies only to the base model it
was trained from, and a broken one is a clear error (never a silent switch of vector space)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from paperfeed.adapters.embed import open_embedder
from paperfeed.adapters.embed.adapted import MANIFEST_NAME, ModelFolder
from paperfeed.adapters.embed.base import packaged_model_path
from paperfeed.adapters.embed.trainer import last_complete_checkpoint
from paperfeed.domain.adaptation import ActiveModel
from paperfeed.domain.errors import EmbedderUnavailable
from tests.support.defaults import embedder_config


def _adopt(models: Path, base: str = "") -> ActiveModel:
    folder = models / "adapted" / "adapted-0123456789ab"
    shutil.copytree(packaged_model_path(), folder)  # a real model folder stands in for a trained one
    active = ActiveModel("adapted-0123456789ab", folder, base, "2026-01-01T00:00:00+00:00", 100)
    ModelFolder(models).adopt(active)
    return active


@pytest.mark.parametrize("backend", ["torch", "onnx-int8"])
def test_the_factory_uses_the_adopted_model(tmp_path: Path, backend: str) -> None:
    models = tmp_path / "models"
    manifest = models / MANIFEST_NAME
    config = embedder_config(tmp_path, backend=backend, cache_dir=models, adapted_manifest=manifest)
    assert open_embedder(config).model_id.startswith("all-MiniLM-L6-v2")  # no manifest yet
    _adopt(models)
    assert open_embedder(config).model_id.startswith("adapted-0123456789ab")
    assert ModelFolder(models).reset() is not None
    assert open_embedder(config).model_id.startswith("all-MiniLM-L6-v2")


def test_a_manifest_for_another_base_model_does_not_apply(tmp_path: Path) -> None:
    models = tmp_path / "models"
    _adopt(models, base="/some/other/model")
    config = embedder_config(
        tmp_path, backend="torch", cache_dir=models, adapted_manifest=models / MANIFEST_NAME
    )
    assert open_embedder(config).model_id == "all-MiniLM-L6-v2"


def test_a_missing_model_or_broken_manifest_is_a_clear_error(tmp_path: Path) -> None:
    models = tmp_path / "models"
    active = _adopt(models)
    config = embedder_config(
        tmp_path, backend="torch", cache_dir=models, adapted_manifest=models / MANIFEST_NAME
    )
    shutil.rmtree(active.path)
    with pytest.raises(
        EmbedderUnavailable, match=r"adapted-0123456789ab is missing .* `paperfeed model reset`"
    ):
        open_embedder(config)
    (models / MANIFEST_NAME).write_text('{"model_id": 1}')
    with pytest.raises(EmbedderUnavailable, match="malformed adapted-model manifest"):
        open_embedder(config)
    (models / MANIFEST_NAME).write_text("{not json")
    with pytest.raises(EmbedderUnavailable, match="unreadable adapted-model manifest"):
        open_embedder(config)
    assert ModelFolder(models).reset() is None  # the way out of a broken manifest
    assert open_embedder(config).model_id == "all-MiniLM-L6-v2"


def test_kept_aside_lists_every_model_but_the_adopted_one(tmp_path: Path) -> None:
    models = tmp_path / "models"
    active = _adopt(models)
    other = models / "adapted" / "adapted-ffffffffffff"
    other.mkdir()
    folder = ModelFolder(models)
    assert folder.kept_aside() == [other]
    folder.reset()
    assert folder.kept_aside() == [active.path, other]


def test_resume_skips_a_checkpoint_the_trainer_did_not_finish_writing(tmp_path: Path) -> None:
    for step, whole in ((2, True), (4, True), (6, False)):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(b"x")
        if whole:
            (folder / "trainer_state.json").write_text(f'{{"global_step": {step}}}')
    (tmp_path / "checkpoint-4" / "trainer_state.json").write_text('{"global_st')  # cut short by a kill
    assert last_complete_checkpoint(tmp_path) == tmp_path / "checkpoint-2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-2"]
    assert last_complete_checkpoint(tmp_path / "none") is None
