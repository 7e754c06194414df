"""The derived indexes a node keeps on its own disk for a PostgreSQL store, and how far they followed it.

On PostgreSQL the store is shared by every node, while a tantivy keyword index or a folder vector index
lives on one node's disk and follows the store (``paperfeed index --follow``, the web's index follower).
The web's page cache must know how far they have followed: a search rendered before this node's indexes
took in another node's write is one version behind (docs/deployment.md).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from paperfeed.domain.embedding import IndexMarks

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from paperfeed.adapters.keyword.factory import KeywordEngine
    from paperfeed.adapters.vector.factory import VectorIndexChoice

__all__ = ["VECTOR_MARKS", "NodeIndexes"]

VECTOR_MARKS = "vector-marks.json"  # a node-local vector index's sync point, in the data folder


class NodeIndexes:
    """``engine`` gives the store's engine (asked on first use); ``keyword_engine`` and ``vector_index``
    are ``PAPERFEED_KEYWORD_ENGINE`` and ``PAPERFEED_VECTOR_INDEX``."""

    def __init__(
        self,
        engine: Callable[[], Engine],
        data_dir: Path,
        keyword_engine: KeywordEngine,
        vector_index: VectorIndexChoice,
    ) -> None:
        self._engine = engine
        self.data_dir = data_dir
        self.keyword_engine = keyword_engine
        self.vector_index = vector_index

    @cached_property
    def local(self) -> tuple[bool, bool]:
        """(keyword, vectors): the indexes this node keeps on its own disk for a PostgreSQL store."""
        from paperfeed.adapters.keyword.factory import resolve_engine
        from paperfeed.adapters.vector.factory import uses_pgvector

        engine = self._engine()
        if engine.dialect.name != "postgresql":
            return False, False
        keyword = resolve_engine(self.keyword_engine, engine) == "tantivy"
        return keyword, not uses_pgvector(engine, self.vector_index)

    def marks(self) -> IndexMarks | None:
        """Where a node-local vector index keeps its sync point (None: in the store)."""
        if not self.local[1]:
            return None
        from paperfeed.adapters.vector.marks import FolderMarks

        return FolderMarks(self.data_dir / VECTOR_MARKS)

    @cached_property
    def _state_files(self) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
        keyword, vectors = self.local
        return (
            (self.data_dir / "keyword" / "state.json",) if keyword else (),
            (self.data_dir / VECTOR_MARKS,) if vectors else (),
        )

    def followed(self) -> tuple[str | None, str | None]:
        """Fingerprints of the small files that move when this node's own indexes catch up with the store
        (the keyword index's state and watermark; the vector index's mark); None where the index is not
        the node's own."""
        from paperfeed.adapters.files import fingerprint

        keyword, vectors = self._state_files
        return (fingerprint(keyword) if keyword else None, fingerprint(vectors) if vectors else None)
