"""Vector index adapters: exact (NumPy) and HNSW (faiss) search over paper embeddings, filter-aware.

The index classes load on first use (PEP 562): importing the package for its factory, e.g. to learn
from a manifest that there is no usable index, does not import NumPy or faiss.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from paperfeed.adapters.vector.factory import KINDS, open_deployment_index, open_vector_index

if TYPE_CHECKING:
    from paperfeed.adapters.vector.index import ExactVectorIndex, HnswVectorIndex, StoredVectorIndex

__all__ = [
    "KINDS",
    "ExactVectorIndex",
    "HnswVectorIndex",
    "StoredVectorIndex",
    "open_deployment_index",
    "open_vector_index",
]

_LAZY = ("ExactVectorIndex", "HnswVectorIndex", "StoredVectorIndex")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from paperfeed.adapters.vector import index

        return getattr(index, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
