"""Search vocabulary and ports: queries, filters, hits, and the embedder / index interfaces.

The search service (``services/search.py``) composes a :class:`KeywordIndex`, a :class:`VectorIndex` and an
:class:`Embedder`; adapters implement them (FTS5/tantivy, exact/HNSW/pgvector, ST/ONNX/fake).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any, Protocol

from .ingest import BatchResult

if TYPE_CHECKING:  # numpy only for the vector type: the CLI's --help imports this module and not numpy
    from typing import TypeAlias

    import numpy as np
    import numpy.typing as npt

    Vectors: TypeAlias = npt.NDArray[np.float32]

__all__ = [
    "CENTROID_SAMPLE",
    "MODEL_LOADING_NOTE",
    "Embedder",
    "EmbedderSource",
    "ExplainedId",
    "IndexManifest",
    "IndexOpener",
    "KeywordIndex",
    "KeywordIndexUnavailable",
    "ParsedQuery",
    "Reason",
    "ScoredId",
    "SearchFilters",
    "SimilarSource",
    "Span",
    "SyncedKeywordIndex",
    "TopicMembers",
    "VectorIndex",
    "VectorIndexError",
    "VectorIndexMismatch",
    "VectorIndexUnavailable",
    "VectorRecord",
    "VectorSource",
    "distinctive_terms",
    "reasons_text",
]


def __getattr__(name: str) -> Any:
    """``Vectors`` at run time too (imported by name elsewhere), built only when asked for."""
    if name == "Vectors":
        import numpy as np
        import numpy.typing as npt

        return npt.NDArray[np.float32]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Restrictions every search path must honour *before* ranking (no post-filter starvation)."""

    date_from: date | None = None  # on Paper.published, inclusive
    date_to: date | None = None  # inclusive
    categories: tuple[str, ...] = ()  # any of these (a paper matches if it carries one of them)
    has_code: bool | None = None  # True: only papers with a GitHub repo
    topic: int | None = None  # only papers of this topic (docs/topics.md); the search resolves it into ...
    paper_ids: frozenset[str] | None = None  # ... an allow-list every engine applies (None: no such limit)

    @property
    def active(self) -> bool:
        return bool(
            self.date_from
            or self.date_to
            or self.categories
            or self.has_code is not None
            or self.topic is not None
            or self.paper_ids is not None
        )


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """A user's query split into safe parts. Never passed raw to an engine's own query syntax.

    ``terms`` are plain words (OR-ed, ranked by BM25); ``phrases`` must occur verbatim; ``excluded`` words
    must not occur; ``authors`` restrict to papers with an author matching each name; the rest refine
    ``filters``.
    """

    raw: str
    terms: tuple[str, ...] = ()
    phrases: tuple[tuple[str, ...], ...] = ()
    excluded: tuple[str, ...] = ()
    authors: tuple[str, ...] = ()
    filters: SearchFilters = field(default_factory=SearchFilters)

    @property
    def text(self) -> str:
        """The free text to embed for dense search (terms and phrases, no operators)."""
        words = list(self.terms)
        for phrase in self.phrases:
            words.extend(phrase)
        return " ".join(words)

    @property
    def constrained(self) -> bool:
        """Whether it has hard constraints (phrase, author, exclusion) only keyword search can enforce."""
        return bool(self.phrases or self.authors or self.excluded)

    @property
    def empty(self) -> bool:
        return not (self.terms or self.phrases or self.authors)


@dataclass(frozen=True, slots=True)
class ScoredId:
    paper_id: str
    score: float


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a paper is in another's similar list: a kind (``co_cited``, ``shared_references``, ``cites``,
    ``cited_by``, ``cited_by_references``, ``cites_citers``), the count behind it and the words shown."""

    kind: str
    count: int
    text: str


def reasons_text(reasons: Sequence[Reason]) -> str | None:
    """The reasons in one line, as every surface shows them ("cites it; shares 8 references"); ``None``
    without any."""
    return "; ".join(r.text for r in reasons) or None


@dataclass(frozen=True, slots=True)
class ExplainedId(ScoredId):
    """A :class:`ScoredId` of a :class:`SimilarSource` that says why it is there."""

    reasons: tuple[Reason, ...] = ()


@dataclass(frozen=True, slots=True)
class Span:
    """A highlighted character range ``[start, end)`` in a field's text."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class VectorRecord:
    """What a vector index stores per paper: the vector plus the facets filters need."""

    paper_id: str
    vector: Vectors  # shape (dim,), float32, L2-normalised
    published: date | None
    categories: tuple[str, ...]
    has_code: bool


@dataclass(frozen=True, slots=True)
class IndexManifest:
    """Written beside every index file: how it was built, so a mismatch is detected, not misused."""

    kind: str  # "exact", "hnsw", ...
    model_id: str
    dimension: int
    count: int
    built_at: str  # ISO-8601 UTC
    extra: dict[str, str] = field(default_factory=dict)


class VectorIndexError(Exception):
    """Base of vector-index failures the search service handles (e.g. by falling back to keyword search)."""


class VectorIndexUnavailable(VectorIndexError):
    """The index files are missing, truncated or corrupt: dense search cannot run until a rebuild."""


class VectorIndexMismatch(VectorIndexError):
    """The stored index was built for another model or dimension: it must be rebuilt, never mixed."""


class KeywordIndexUnavailable(Exception):
    """The keyword index cannot answer (e.g. its files were damaged after it was opened): search goes on
    with dense results only until a repair (``paperfeed check --repair``) or a restart rebuilds it."""


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors. ``model_id`` names the vector space."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return an array of shape ``(len(texts), dimension)``; rows are unit length."""
        ...


class EmbedderSource(Protocol):
    """The embedder in use now. It changes when ``paperfeed model adapt`` (or ``reset``) adopts another
    model, so a reader asks for it at each use and keeps it no longer than that use
    (``services/embedders.py``; a fixed one for tests and benches: ``FixedEmbedder``)."""

    def current(self) -> Embedder: ...

    def loading(self) -> bool:
        """True while the model is being loaded in the background (a web process loads it at start): a
        query then gets keyword matches at once rather than waiting for the model."""
        ...


# What a search says when it arrives while the web process is still loading the embedding model (the
# seconds after a start): it answers at once with keyword matches instead of waiting for the model.
MODEL_LOADING_NOTE = (
    "meaning search is starting (the embedding model is still loading, usually seconds); showing keyword "
    "matches"
)

CENTROID_SAMPLE = 50_000  # vectors averaged for VectorIndex.centroid: a closer estimate would not move it


class VectorIndex(Protocol):
    """Nearest-neighbour search over paper vectors, filter-aware."""

    @property
    def manifest(self) -> IndexManifest: ...

    def __len__(self) -> int: ...

    def upsert(self, records: Iterable[VectorRecord]) -> None: ...

    def remove(self, paper_ids: Iterable[str]) -> None: ...

    def search(
        self, vector: Vectors, k: int, filters: SearchFilters | None = None, exclude: Iterable[str] = ()
    ) -> list[ScoredId]:
        """Top ``k`` by cosine similarity among papers passing ``filters`` (best first)."""
        ...

    def vector(self, paper_id: str) -> Vectors | None: ...

    def vectors(self, paper_ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors of those of ``paper_ids`` the index holds, in one lookup (re-ranking a
        hundred candidates must not be a hundred round trips to a database)."""
        ...

    def centroid(self) -> Vectors | None:
        """The mean of the stored vectors (estimated from at most :data:`CENTROID_SAMPLE` of them), or
        None when the index is empty: similar papers measure closeness around it."""
        ...

    def save(self) -> None:
        """Persist all changes atomically: readers see the old index or the new one, never a mix."""
        ...

    def reload_if_changed(self) -> bool:
        """Pick up an index saved by another process (cheap when nothing changed); True if reloaded."""
        ...


class VectorSource(Protocol):
    """The stored vector index as this process reads it: found once it exists, reloaded when another
    process saves a newer generation (``services/vector_reader.py``)."""

    def current(self) -> VectorIndex | None:
        """The index (None: nothing embedded yet); raises :class:`VectorIndexError` when it is unusable."""
        ...

    def count(self) -> int | None:
        """Papers in the index (0 before anything is embedded); None when it cannot be read."""
        ...


class TopicMembers(Protocol):
    """A topic's papers, for search's topic filter (``TopicPickService`` implements it)."""

    def members(self, topic_id: int) -> frozenset[str] | None:
        """The paper ids of ``topic_id`` (a removed topic followed to its successor); None: no such topic."""
        ...


class KeywordIndex(Protocol):
    """BM25 keyword search with field weights; returns best first."""

    def search(self, query: ParsedQuery, k: int) -> list[ScoredId]: ...

    def highlight(self, query: ParsedQuery, text: str) -> list[Span]:
        """Spans of ``text`` matching the query's terms/phrases (for highlightedTitle/Summary)."""
        ...

    def more_like_this(
        self,
        title: str,
        abstract: str,
        k: int,
        filters: SearchFilters | None = None,
        *,
        max_terms: int = 25,
    ) -> list[ScoredId]:
        """Papers sharing the most distinctive terms of ``title`` + ``abstract`` (a paper's own text),
        best first: the ``max_terms`` terms of highest tf-idf in that text, searched as an OR query (a
        "more like this" query). The paper itself, when indexed, is among the results."""
        ...


class SimilarSource(Protocol):
    """A further list of papers related to a paper, fused into "similar papers" beside the embedding
    neighbours and the keyword list (co-citation or bibliographic coupling, once citations are stored)."""

    @property
    def name(self) -> str: ...

    def related(self, paper_id: str, k: int, filters: SearchFilters | None = None) -> list[ScoredId]:
        """Best first; may include ``paper_id`` itself (the caller removes it). Items that are
        :class:`ExplainedId` carry their reasons to the similar list's hits."""
        ...


def distinctive_terms(
    counts: Mapping[str, int], doc_freq: Mapping[str, float], total: float, n: int, min_doc_freq: float = 2
) -> list[str]:
    """The ``n`` terms of a text with the highest tf-idf, best first (ties: the term), for engines whose
    query language has no "more like this" of its own.

    ``counts``: the text's analysed terms and how often each occurs; ``doc_freq``: in how many indexed
    papers each occurs (a term missing there counts as ``min_doc_freq``); ``total``: papers indexed. A
    term in fewer than ``min_doc_freq`` papers is dropped: found only in the paper itself, it cannot
    lead to another one. The idf is BM25's, so a term in over half the papers weighs almost nothing.
    """
    scored: list[tuple[float, str]] = []
    for term, tf in counts.items():
        df = doc_freq.get(term, min_doc_freq)
        if df < min_doc_freq or tf <= 0:
            continue
        idf = math.log(1.0 + (total - df + 0.5) / (df + 0.5))
        scored.append((tf * idf, term))
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [term for _, term in scored[: max(0, n)]]


class IndexOpener(Protocol):
    """Opens the vector index for a model: the stored one (``fresh=False``) or a new, empty one that
    replaces it when saved (``fresh=True``). Raises a ``VectorIndexError`` when the stored one is unusable
    (another model, corrupt files); the service then asks for a fresh one."""

    def __call__(self, *, model_id: str, dimension: int, fresh: bool) -> VectorIndex: ...


class SyncedKeywordIndex(Protocol):
    """A :class:`~paperfeed.domain.search.KeywordIndex` the ingest service keeps in step with the store."""

    @property
    def name(self) -> str: ...

    def search(self, query: ParsedQuery, k: int) -> list[ScoredId]: ...

    def highlight(self, query: ParsedQuery, text: str) -> list[Span]: ...

    def more_like_this(
        self,
        title: str,
        abstract: str,
        k: int,
        filters: SearchFilters | None = None,
        *,
        max_terms: int = 25,
    ) -> list[ScoredId]: ...

    def on_papers_changed(self, changed: Sequence[str] | BatchResult) -> None:
        """Ingest listener: a committed batch's result, or just the ids of papers that changed."""
        ...

    def flush(self) -> None:
        """Block until every change passed to ``on_papers_changed`` is searchable."""
        ...

    def rebuild(self) -> object: ...

    def __len__(self) -> int:
        """Papers in the index."""
        ...

    def close(self) -> None: ...
