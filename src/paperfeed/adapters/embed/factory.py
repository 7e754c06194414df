"""Builds the configured embedder: one registry of backends, so the fake one is wired like the real ones."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from paperfeed.domain.errors import EmbedderUnavailable
from paperfeed.domain.search import Embedder

from .adapted import active_model_source
from .base import ModelSource, resolve_model

__all__ = ["BACKENDS", "EmbedderConfig", "EmbedderFactory", "open_embedder"]


@dataclass(frozen=True, slots=True)
class EmbedderConfig:
    """What :func:`open_embedder` needs: the embedding settings, mapped by ``bootstrap.embedder_config``
    (benches and tests build one there too, from ``SettingsModel()``), so it keeps no defaults of its own
    for them (tests/test_settings_defaults_once.py)."""

    backend: str  # a concrete backend: "auto" is resolved before (services/calibration.py)
    model: str | None  # None: the packaged all-MiniLM-L6-v2; for "fake": the fake model's name
    cache_dir: Path  # where exported ONNX files are kept (the machine's shared cache)
    legacy_cache_dirs: tuple[Path, ...]  # per-data-folder exports of older versions, used first
    threads: int | None  # None: the runtime's default (all cores)
    bf16: bool  # torch only: bfloat16 autocast (needs AVX512-BF16/AMX)
    max_tokens: int | None  # None: the model's own window, at most MAX_TOKENS
    adapted_manifest: Path | None  # <data_dir>/models/active-model.json: an adopted adapted model
    spinning: bool = True  # ONNX Runtime: idle threads busy-wait (off when the CPU is shared)
    queries: bool = False  # embeds queries only (a web process): ONNX float32 takes its compact variant
    fake_dimension: int = 64


def _model_source(config: EmbedderConfig) -> ModelSource:
    """The adopted adapted model when the manifest names one trained from the configured base, else the
    configured model (``paperfeed model adapt`` / ``reset`` change the manifest, not the settings)."""
    if config.adapted_manifest is not None:
        adopted = active_model_source(config.adapted_manifest, config.model)
        if adopted is not None:
            return adopted
    return resolve_model(config.model)


def _torch(config: EmbedderConfig) -> Embedder:
    from .sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(
        _model_source(config),
        threads=config.threads,
        bf16=config.bf16,
        max_tokens=config.max_tokens,
        spinning=config.spinning,
    )


def _onnx(quantized: bool) -> Callable[[EmbedderConfig], Embedder]:
    def build(config: EmbedderConfig) -> Embedder:
        from .onnx import OnnxEmbedder

        return OnnxEmbedder(
            _model_source(config),
            config.cache_dir,
            quantized=quantized,
            threads=config.threads,
            max_tokens=config.max_tokens,
            spinning=config.spinning,
            legacy_dirs=config.legacy_cache_dirs,
            compact=config.queries,
        )

    return build


def _fake(config: EmbedderConfig) -> Embedder:
    """The hashing embedder, keyed by the configured model's name -- or by an adopted model's id, so an
    adoption changes its vector space the way it changes a real model's (tests of following a change)."""
    from .fake import FakeEmbedder

    name = config.model or "fake"
    if config.adapted_manifest is not None:
        adopted = active_model_source(config.adapted_manifest, config.model)
        if adopted is not None:
            name = adopted.name
    return FakeEmbedder(config.fake_dimension, name=name)


BACKENDS: dict[str, Callable[[EmbedderConfig], Embedder]] = {
    "torch": _torch,
    "onnx": _onnx(False),
    "onnx-int8": _onnx(True),
    "fake": _fake,
}


def open_embedder(config: EmbedderConfig) -> Embedder:
    """The embedder for ``config``; models load lazily, on the first ``embed`` or ``dimension``."""
    build = BACKENDS.get(config.backend)
    if build is None:
        raise EmbedderUnavailable(
            f"unknown embedding backend {config.backend!r} (choose one of {', '.join(BACKENDS)})"
        )
    if config.bf16 and config.backend != "torch":
        raise EmbedderUnavailable("PAPERFEED_TORCH_BF16 applies to the torch backend only")
    return build(config)


@dataclass(frozen=True, slots=True)
class EmbedderFactory:
    """:class:`~paperfeed.domain.embedding.EmbedderOpener` for one configuration: its embedder by backend
    (None: the configured one), and the stamp of the adopted-model manifest it reads."""

    config: EmbedderConfig

    def config_for(self, backend: str | None = None, *, queries: bool = False) -> EmbedderConfig:
        """The configuration with ``backend`` (None: the configured one), for a process of ``queries``."""
        config = self.config if backend is None else replace(self.config, backend=backend)
        return replace(config, queries=True) if queries else config

    def open(self, backend: str | None = None, *, queries: bool = False) -> Embedder:
        return open_embedder(self.config_for(backend, queries=queries))

    def adopted_stamp(self) -> tuple[int, int] | None:
        manifest = self.config.adapted_manifest
        try:
            found = manifest.stat() if manifest is not None else None
        except OSError:
            return None
        return None if found is None else (found.st_mtime_ns, found.st_size)
