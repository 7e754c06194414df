"""Adapted models in the data dir, and the manifest that makes one the instance's embedder.

Layout under ``<data_dir>/models``: ``adapted/<model_id>/`` holds each finished model (a plain
sentence-transformers folder), ``adapt-runs/<key>/`` a training run's checkpoints, and
``active-model.json`` names the adopted model. The embedder factory reads only the manifest
(:func:`active_model_source`); deleting the manifest (``paperfeed model reset``) returns to the base model.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

from paperfeed.domain.adaptation import ActiveModel, Quality
from paperfeed.domain.errors import EmbedderUnavailable

from .base import ModelSource

__all__ = ["MANIFEST_NAME", "ModelFolder", "active_model_source"]

MANIFEST_NAME = "active-model.json"


def _quality(raw: Any) -> Quality | None:
    return Quality(**raw) if isinstance(raw, dict) else None


def read_manifest(path: Path) -> ActiveModel | None:
    """The adopted model, or None when there is no manifest. A broken manifest is an error, not a
    silent fallback: the vectors in the store were made with the model it names."""
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise EmbedderUnavailable(f"{path}: unreadable adapted-model manifest ({exc})") from exc
    try:
        return ActiveModel(
            model_id=str(raw["model_id"]),
            path=Path(raw["path"]),
            base=str(raw["base"]),
            created=str(raw["created"]),
            papers=int(raw["papers"]),
            base_quality=_quality(raw.get("base_quality")),
            adapted_quality=_quality(raw.get("adapted_quality")),
            extra=dict(raw.get("extra") or {}),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise EmbedderUnavailable(
            f"{path}: malformed adapted-model manifest ({exc}); `paperfeed model reset` removes it"
        ) from exc


def active_model_source(manifest: Path, base_spec: str | None) -> ModelSource | None:
    """The adopted model as a :class:`ModelSource` named by its model_id, when the manifest names one
    trained from the configured base model (``None``: the packaged one); otherwise None."""
    active = read_manifest(manifest)
    if active is None or active.base != (base_spec or "").strip():
        return None
    if not (active.path / "config.json").is_file():
        raise EmbedderUnavailable(
            f"the adopted model {active.model_id} is missing at {active.path}; "
            "`paperfeed model reset` returns to the base model"
        )
    return ModelSource(active.model_id, active.path, str(active.path))


class ModelFolder:
    """:class:`~paperfeed.domain.adaptation.AdaptedModels` in ``<data_dir>/models``."""

    def __init__(self, models_dir: Path) -> None:
        self.root = models_dir
        self.manifest = models_dir / MANIFEST_NAME

    def run_dir(self, key: str) -> Path:
        return self.root / "adapt-runs" / key

    def model_dir(self, model_id: str) -> Path:
        return self.root / "adapted" / model_id

    def active(self) -> ActiveModel | None:
        return read_manifest(self.manifest)

    def adopt(self, model: ActiveModel) -> None:
        """Write the manifest atomically (a reader sees the old one or the new one, never half)."""
        self.root.mkdir(parents=True, exist_ok=True)
        data = asdict(model)
        data["path"] = str(model.path)
        tmp = self.manifest.with_name(f".{MANIFEST_NAME}.{uuid.uuid4().hex[:8]}")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, self.manifest)

    def reset(self) -> ActiveModel | None:
        """Remove the manifest, even a broken one (reset is the way out of that too)."""
        try:
            previous = self.active()
        except EmbedderUnavailable:
            previous = None
        with contextlib.suppress(FileNotFoundError):
            self.manifest.unlink()
        return previous

    def kept_aside(self) -> list[Path]:
        folder = self.root / "adapted"
        active = self.active()
        if not folder.is_dir():
            return []
        return sorted(
            p
            for p in folder.iterdir()
            if p.is_dir() and (active is None or p.resolve() != active.path.resolve())
        )
