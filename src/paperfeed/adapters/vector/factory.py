"""Open the vector index a deployment is configured for; the one entry point other layers use."""

from __future__ import annotations

from pathlib import Path

from paperfeed.adapters.vector.index import StoredVectorIndex

__all__ = ["KINDS", "open_vector_index"]

KINDS = ("exact", "hnsw", "auto")


def open_vector_index(path: Path, *, kind: str, model_id: str, dimension: int) -> StoredVectorIndex:
    """Open (or start empty) the index in folder ``path`` for vectors of ``model_id``/``dimension``.

    ``kind``: ``"exact"`` (NumPy scan), ``"hnsw"`` (faiss HNSW + exact re-scoring) or ``"auto"`` (exact
    while small, HNSW once a save finds it large; an existing index keeps its kind). Raises
    :class:`~paperfeed.domain.search.VectorIndexMismatch` if the stored index was built for another model
    or dimension, :class:`~paperfeed.domain.search.VectorIndexUnavailable` if its files are missing or
    corrupt, :class:`ValueError` for an unknown ``kind``.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown vector index kind {kind!r}; expected one of {', '.join(KINDS)}")
    if kind == "exact":
        return StoredVectorIndex(path, model_id=model_id, dimension=dimension, policy="exact")
    if kind == "hnsw":
        return StoredVectorIndex(path, model_id=model_id, dimension=dimension, policy="hnsw")
    return StoredVectorIndex(path, model_id=model_id, dimension=dimension, policy="auto")
