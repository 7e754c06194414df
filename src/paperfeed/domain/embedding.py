"""What gets embedded and where embeddings live: the one text recipe, and the embedding-store port.

Every vector of a paper, whether made by the background indexer, a benchmark cache or a test, comes from
:func:`embedding_text`, so vectors made in different places are comparable.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from .search import Embedder, VectorRecord

if TYPE_CHECKING:  # NumPy only in annotations: a keyword-only search never imports it
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

__all__ = [
    "MAX_TOKENS",
    "MAX_WORKERS",
    "EmbedWorkers",
    "EmbeddedBatch",
    "EmbedderOpener",
    "EmbeddingStore",
    "IndexMarks",
    "PendingPaper",
    "embedding_text",
    "vector_index_mark",
]

MAX_TOKENS = 256  # longer texts are truncated by the embedders: the abstract's opening carries its gist
MAX_WORKERS = 64  # embedding processes of one run (``paperfeed index --workers``): more is a typo


def embedding_text(title: str, abstract: str) -> str:
    """``title + ". " + abstract``: the title sets the topic, the abstract the detail; a paper without an
    abstract is embedded by its title alone. Texts are already whitespace-normalised by validation."""
    return f"{title}. {abstract}" if abstract else title


@dataclass(frozen=True, slots=True)
class PendingPaper:
    """A paper whose vector for the current model is missing or stale (its text changed)."""

    paper_id: str
    title: str
    abstract: str
    content_hash: str
    has_vector: bool  # True: it has a vector of another model or of older text, which will be replaced

    @property
    def text(self) -> str:
        return embedding_text(self.title, self.abstract)


@dataclass(frozen=True, slots=True)
class EmbeddedBatch:
    """One batch's vectors from an embedding worker process, with which worker made them and how long it
    took (``paperfeed index --workers N`` reports papers/s per worker from these)."""

    vectors: Vectors
    model_id: str  # the worker's vector space: must be the one the run writes
    worker: int  # the worker's process id
    seconds: float  # embedding time of this batch, the model's loading excluded
    load_seconds: float  # loading the model (the worker's first batch only; else 0)


class EmbedWorkers(Protocol):
    """Several embedding processes, each with its own model session and its share of the cores.

    They only compute: the caller stays the one writer of the store, so a batch is committed once, in one
    transaction, and a run killed anywhere loses at most the batches in flight.
    """

    @property
    def size(self) -> int:
        """How many worker processes."""
        ...

    @property
    def threads(self) -> int:
        """Threads each worker's model session uses."""
        ...

    @property
    def backend(self) -> str:
        """The embedding backend every worker runs (``onnx-int8``, ``torch``…)."""
        ...

    def submit(self, texts: Sequence[str]) -> Future[EmbeddedBatch]:
        """Embed ``texts`` in some worker; the future fails with EmbedderUnavailable if a worker cannot."""
        ...

    def close(self) -> None:
        """Stop the workers now: batches not yet done are dropped (they stay in the backlog)."""
        ...


VECTOR_INDEX_MARK = "vector-index:"  # the names of vector indexes' sync points start so


def vector_index_mark(model_id: str) -> str:
    """The name of the sync point of ``model_id``'s vector index: it moves each time the index is saved
    with new vectors, which is also when search can see them (the page cache's data version reads it)."""
    return VECTOR_INDEX_MARK + model_id


class IndexMarks(Protocol):
    """Where a vector index's sync point (a high-water mark) is kept: in the store for an index every
    process shares, next to the index for one a node keeps on its own disk."""

    def get_mark(self, name: str) -> datetime | None: ...

    def set_mark(self, name: str, value: datetime | None) -> None: ...


class EmbeddingStore(Protocol):
    """Paper vectors, one per paper, tagged with the model and the content hash they were made from."""

    def model_counts(self) -> dict[str, int]:
        """How many stored vectors each model has (more than one key means a model change in progress)."""
        ...

    def count_papers(self) -> int: ...

    def count_backlog(self, model_id: str) -> int:
        """Papers with no vector of ``model_id`` for their current text."""
        ...

    def backlog(
        self, model_id: str, *, after: str = "", limit: int = 256, since: datetime | None = None
    ) -> list[PendingPaper]:
        """The next ``limit`` such papers with id greater than ``after``, in id order; ``since``: only
        papers added or changed from then on (the papers that arrived while a run was under way)."""
        ...

    def save_vectors(self, model_id: str, papers: Sequence[PendingPaper], vectors: Vectors) -> None:
        """Store one vector per paper (replacing any older one) in a single transaction."""
        ...

    def newest(self, model_id: str) -> datetime | None:
        """When the newest vector of ``model_id`` was stored (the high-water mark for index syncs)."""
        ...

    def records(
        self, model_id: str, *, since: datetime | None = None, until: datetime | None = None, page: int = 4096
    ) -> Iterator[list[VectorRecord]]:
        """Vectors of ``model_id`` stored in ``[since, until]`` with the facets a vector index filters on."""
        ...

    def vectors(self, model_id: str, paper_ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors of ``model_id`` for those of ``paper_ids`` that have one."""
        ...

    def delete(self, paper_ids: Sequence[str]) -> int: ...

    def delete_all(self) -> int:
        """Forget every vector of every model (``paperfeed index --rebuild``)."""
        ...

    def delete_other_models(self, model_id: str) -> int: ...

    def get_mark(self, name: str) -> datetime | None:
        """A stored timestamp (how far a vector index has been synced)."""
        ...

    def set_mark(self, name: str, value: datetime | None) -> None: ...


class EmbedderOpener(Protocol):
    """Builds the embedders of this instance's configuration (the composition root's adapter)."""

    def open(self, backend: str | None = None, *, queries: bool = False) -> Embedder:
        """The embedder of ``backend`` (None: the configured one); its model loads on first use.
        ``queries``: it will embed queries only (a web process), so it may hold the model in less memory
        where the vectors stay the same."""
        ...

    def adopted_stamp(self) -> tuple[int, int] | None:
        """What says which adapted model is adopted (the manifest's mtime and size; None: none is):
        it changes when ``paperfeed model adapt`` or ``reset`` does."""
        ...
