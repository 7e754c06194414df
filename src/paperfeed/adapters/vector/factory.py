"""Open the vector index a deployment is configured for; the one entry point other layers use.

This module is also the one place that chooses the backend (``PAPERFEED_VECTOR_INDEX``): pgvector in the
store's own database (``auto`` on PostgreSQL), or a folder index (:class:`StoredVectorIndex`) in the data
folder (``auto`` on SQLite; ``local`` on PostgreSQL, where each node keeps its own and follows the
database by a watermark kept next to it, see :class:`FolderMarks`).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from paperfeed.adapters.vector.manifest import MANIFEST_NAME, check_compatible, read_manifest

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from paperfeed.adapters.vector.index import Policy, StoredVectorIndex
    from paperfeed.domain.search import VectorIndex

__all__ = [
    "KINDS",
    "DeploymentVectors",
    "VectorIndexChoice",
    "check_stored_model",
    "open_deployment_index",
    "open_vector_index",
    "stored_dimension",
    "uses_pgvector",
]

VectorIndexChoice = Literal["auto", "local", "pgvector"]

# the folder index's kinds, each the StoredVectorIndex policy of the same name
_POLICIES: dict[str, Policy] = {"exact": "exact", "hnsw": "hnsw", "auto": "auto"}
KINDS = tuple(_POLICIES)


def open_vector_index(path: Path, *, kind: str, model_id: str, dimension: int) -> StoredVectorIndex:
    """Open (or start empty) the index in folder ``path`` for vectors of ``model_id``/``dimension``.

    ``kind``: ``"exact"`` (NumPy scan), ``"hnsw"`` (faiss HNSW + exact re-scoring) or ``"auto"`` (exact
    while small, HNSW once a save finds it large; an existing index keeps its kind). Raises
    :class:`~paperfeed.domain.search.VectorIndexMismatch` if the stored index was built for another model
    or dimension, :class:`~paperfeed.domain.search.VectorIndexUnavailable` if its files are missing or
    corrupt, :class:`ValueError` for an unknown ``kind``.
    """
    policy = _POLICIES.get(kind)
    if policy is None:
        raise ValueError(f"unknown vector index kind {kind!r}; expected one of {', '.join(KINDS)}")
    from paperfeed.adapters.vector.index import StoredVectorIndex  # NumPy and faiss: only now

    return StoredVectorIndex(path, model_id=model_id, dimension=dimension, policy=policy)


def uses_pgvector(engine: Engine, choice: VectorIndexChoice) -> bool:
    """Whether vectors live in pgvector (in the PostgreSQL store) rather than in a folder index.

    ``auto`` is pgvector on PostgreSQL (nothing on the node's disk), the folder index on SQLite.
    """
    postgres = engine.dialect.name == "postgresql"
    if choice == "pgvector" and not postgres:
        raise ValueError("PAPERFEED_VECTOR_INDEX=pgvector needs a PostgreSQL store (PAPERFEED_DATABASE_URL)")
    return choice == "pgvector" or (choice == "auto" and postgres)


def stored_dimension(engine: Engine, folder: Path, choice: VectorIndexChoice) -> int | None:
    """The dimension of the stored index, or None when nothing has been embedded yet."""
    if uses_pgvector(engine, choice):
        from paperfeed.adapters.vector.pgvector_index import stored_manifest

        found = stored_manifest(engine)
        return None if found is None else found.dimension
    return folder_dimension(folder)


def folder_dimension(folder: Path) -> int | None:
    """The dimension of the folder index in ``folder``, or None when nothing has been embedded yet."""
    saved = read_manifest(folder)
    return None if saved is None else saved.manifest.dimension


def check_stored_model(engine: Engine, folder: Path, *, model_id: str, choice: VectorIndexChoice) -> None:
    """Refuse a folder index built with another model from its manifest alone, raising the
    :class:`~paperfeed.domain.search.VectorIndexMismatch` opening it would raise, but before NumPy and
    faiss are loaded to open it: a search that cannot use the index stays a cheap keyword search.
    (pgvector checks its manifest table when opened, which loads nothing extra.)"""
    if not uses_pgvector(engine, choice):
        check_folder_model(folder, model_id=model_id)


def check_folder_model(folder: Path, *, model_id: str) -> None:
    """:func:`check_stored_model` for a folder index (what a SQLite store uses unless told otherwise)."""
    found = read_manifest(folder)
    if found is not None:
        stored = found.manifest
        check_compatible(stored, folder / MANIFEST_NAME, model_id=model_id, dimension=stored.dimension)


def open_deployment_index(
    engine: Engine,
    folder: Path,
    *,
    model_id: str,
    dimension: int,
    fresh: bool,
    choice: VectorIndexChoice,
) -> VectorIndex:
    """The index ``paperfeed index`` maintains: pgvector (see :func:`uses_pgvector`), else the folder
    index in ``folder`` (exact while small, HNSW once large).

    ``fresh`` is asked for when the stored index is another model's, damaged, or out of step: no reader
    can use it as it is, so a new one starts in its place and is complete when saved.
    """
    if uses_pgvector(engine, choice):  # in the store's own database
        from paperfeed.adapters.vector.pgvector_index import PgVectorIndex

        return PgVectorIndex(engine, model_id=model_id, dimension=dimension, fresh=fresh)
    if fresh and folder.exists():
        shutil.rmtree(folder)
    return open_vector_index(folder, kind="auto", model_id=model_id, dimension=dimension)


class DeploymentVectors:
    """The vector index of this deployment: an :class:`~paperfeed.domain.search.IndexOpener` for
    ``paperfeed index`` (call it) and the opener search reads through (:meth:`open_for_reading`).

    ``engine`` gives the store's engine, asked only when the index may live in the store: on a SQLite
    store with ``PAPERFEED_VECTOR_INDEX`` auto or local the folder index is found and checked without
    it, so ``paperfeed search`` starts without SQLAlchemy (docs/cli.md)."""

    def __init__(
        self, engine: Callable[[], Engine], folder: Path, choice: VectorIndexChoice, *, folder_only: bool
    ) -> None:
        self.engine = engine
        self.folder = folder
        self.choice = choice
        self.folder_only = folder_only  # a SQLite store whose vectors can only be a folder index

    def __call__(self, *, model_id: str, dimension: int, fresh: bool) -> VectorIndex:
        return open_deployment_index(
            self.engine(),
            self.folder,
            model_id=model_id,
            dimension=dimension,
            fresh=fresh,
            choice=self.choice,
        )

    def open_for_reading(self, model_id: str) -> VectorIndex | None:
        """The stored index of ``model_id``, opened for reading; None while nothing has been embedded.
        Another model's index is refused from its manifest, before NumPy and faiss are loaded."""
        if self.folder_only:
            dimension = folder_dimension(self.folder)
            if dimension is None:
                return None
            check_folder_model(self.folder, model_id=model_id)
            return open_vector_index(self.folder, kind="auto", model_id=model_id, dimension=dimension)
        engine = self.engine()
        dimension = stored_dimension(engine, self.folder, self.choice)
        if dimension is None:
            return None  # nothing embedded yet: keyword search only
        check_stored_model(engine, self.folder, model_id=model_id, choice=self.choice)
        return self(model_id=model_id, dimension=dimension, fresh=False)
