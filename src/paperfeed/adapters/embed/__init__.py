"""Embedders: implementations of :class:`~paperfeed.domain.search.Embedder`.

``torch`` (sentence-transformers, the reference), ``onnx`` (same vectors, faster), ``onnx-int8``
(quantised, fastest, its own vector space) and ``fake`` (hashing trick, for tests). Heavy libraries are
imported only when a backend is built.
"""

from .base import ModelSource, resolve_model
from .factory import BACKENDS, EmbedderConfig, EmbedderFactory, open_embedder

__all__ = [
    "BACKENDS",
    "EmbedderConfig",
    "EmbedderFactory",
    "ModelSource",
    "open_embedder",
    "resolve_model",
]
