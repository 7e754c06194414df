"""The paper graph: who cites whom, as open scholarly APIs tell it (issue #16).

A *work* is one end of a citation. It may be a paper in the store or only a name a source gave (a
reference list shows every entry, in the store or not), so works are keyed by one canonical string,
:func:`work_key`: the store's paper id when the work has an arXiv id (``2401.12345``), else
``doi:<lower-case DOI>``, else ``s2:<Semantic Scholar paperId>``, else ``openalex:W…``. Two sources
naming the same work by the same external id therefore meet on one key, and an edge is stored once per
(citing, cited) pair whichever source reported it.

The ports here are implemented by ``adapters/sources/semantic_scholar.py`` / ``openalex.py``
(:class:`CitationSource`) and ``adapters/store/citations.py`` (:class:`CitationRecords`); the services
(``services/citations.py`` harvesting, ``services/paper_graph.py`` reading) depend only on them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from enum import Enum
from typing import Protocol

from .ids import InvalidPaperId, parse_arxiv_id

__all__ = [
    "Citation",
    "CitationRecords",
    "CitationSort",
    "CitationSource",
    "GraphNeighbourhood",
    "GraphPage",
    "GraphRow",
    "LinkCounts",
    "PaperLinks",
    "RelatedCounts",
    "SaveResult",
    "WorkRef",
    "arxiv_month_day",
    "work_key",
]

_DOI = re.compile(r"^10\.\d{4,9}/\S+$")
_ARXIV_KEY = re.compile(r"(?:(?P<new>\d{4})\.\d{4,5}|[a-z]+(?:-[a-z]+)*/(?P<old>\d{4})\d{3})")


def arxiv_month_day(key: str) -> int:
    """The month an arXiv work's key names, as a ``sort_day`` (``yyyymm00``); ``0`` for other keys.

    An arXiv id is given out in the month of the first version (``2401.12345``: January 2024;
    ``hep-th/9407087``: July 1994; old-style ids ran from 1991 to March 2007), so a work known only by its
    id still sorts by date.
    """
    found = _ARXIV_KEY.fullmatch(key)
    if found is None:
        return 0
    yymm = found["new"] or found["old"]
    yy, month = int(yymm[:2]), int(yymm[2:])
    if not 1 <= month <= 12:
        return 0
    year = 2000 + yy if found["new"] or yy < 91 else 1900 + yy
    return year * 10000 + month * 100


def work_key(
    *,
    arxiv_id: str | None = None,
    doi: str | None = None,
    s2_id: str | None = None,
    openalex_id: str | None = None,
) -> str | None:
    """The canonical key of a work from whatever ids a source gives, best first; ``None`` when none
    is usable (the reference is then shown but cannot be linked or counted).

    An arXiv id wins (it is the store's own key, so edges meet the papers paperfeed holds); arXiv DOIs
    (``10.48550/arXiv.…``) count as arXiv ids. DOIs are case-insensitive, so they are lower-cased.
    """
    if arxiv_id:
        try:
            return parse_arxiv_id(arxiv_id).base
        except InvalidPaperId:
            pass
    if doi:
        d = doi.strip().lower().removeprefix("https://doi.org/").removeprefix("doi:")
        if d.startswith("10.48550/arxiv."):
            try:
                return parse_arxiv_id(d.removeprefix("10.48550/arxiv.")).base
            except InvalidPaperId:
                pass
        if _DOI.match(d):
            return f"doi:{d}"
    if s2_id and re.fullmatch(r"[0-9a-f]{40}", s2_id):
        return f"s2:{s2_id}"
    if openalex_id:
        w = openalex_id.rsplit("/", 1)[-1]
        if re.fullmatch(r"W\d{1,12}", w):
            return f"openalex:{w}"
    return None


@dataclass(frozen=True, slots=True)
class WorkRef:
    """A work as a source describes it. ``key`` is :func:`work_key` of its ids."""

    key: str
    title: str | None = None
    year: int | None = None
    published: date | None = None
    arxiv_id: str | None = None
    doi: str | None = None
    s2_id: str | None = None
    openalex_id: str | None = None
    # what the source reports as its total cited-by count (for works outside the store, the only count)
    citation_count: int | None = None
    reference_count: int | None = None


@dataclass(frozen=True, slots=True)
class Citation:
    """One edge: ``citing`` cites ``cited``. Contexts/intents/influence only where the source has them."""

    citing: str  # work key
    cited: str  # work key
    source: str  # "s2" | "openalex"
    is_influential: bool | None = None
    contexts: tuple[str, ...] = ()
    intents: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PaperLinks:
    """What one source answered about one paper of the store.

    ``work`` is ``None`` when the source does not know the paper (nothing is stored for it, but the
    harvest records that it asked, so it does not ask again every day). ``works`` describes every key
    that appears in ``edges`` (the paper itself included). ``citations_complete`` is false when the
    cited-by list was cut at the harvest's limit (``citation_count`` still tells the total).
    ``unkeyed`` counts entries of either list that carry no usable id (:func:`work_key` is ``None``, e.g.
    Semantic Scholar's unresolved references with ``paperId: null``): they cannot be an edge, so they are
    not stored, only counted in the harvest's report.
    """

    paper_id: str
    source: str
    work: WorkRef | None
    works: tuple[WorkRef, ...] = ()
    edges: tuple[Citation, ...] = ()
    references_complete: bool = True
    citations_complete: bool = True
    unkeyed: int = 0


class CitationSource(Protocol):
    """A scholarly API that knows papers' references and citations (Semantic Scholar, OpenAlex).

    Raises :class:`~paperfeed.domain.errors.SourceUnavailable` when the API cannot be reached (offline,
    timeouts and 5xx after retries, 429 after honouring ``Retry-After``) and
    :class:`~paperfeed.domain.errors.SourceAnswerError` when it answers with something malformed;
    a paper it does not know comes back as ``PaperLinks(work=None)``, never as an error.
    """

    @property
    def name(self) -> str: ...

    def links(self, paper_ids: Sequence[str], *, max_citations: int) -> Iterator[PaperLinks]:
        """References (all) and citations (up to ``max_citations`` each) of arXiv papers, in order."""
        ...


class CitationSort(Enum):
    DATE = "date"  # newest first (unknown dates last)
    CITATIONS = "citations"  # most cited first


@dataclass(frozen=True, slots=True)
class GraphRow:
    """One entry of a references or cited-by list."""

    work: WorkRef
    in_store: bool  # the work is a paper of this instance (link inside paperfeed)
    citation_count: (
        int  # cited-by count for sorting: edges in this instance, or the source's figure if higher
    )
    is_influential: bool | None
    contexts: tuple[str, ...]
    intents: tuple[str, ...]
    sources: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GraphPage:
    rows: tuple[GraphRow, ...]
    total: int  # rows matching (before paging)


@dataclass(frozen=True, slots=True)
class LinkCounts:
    references: int
    citations: int  # max(edges stored, source's reported total)
    citations_last_12_months: int  # citing works dated within 365 days of ``as_of``
    harvested_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class RelatedCounts:
    """Raw overlaps around one paper, from which :mod:`paperfeed.domain.related_work` ranks and explains.

    Each mapping is work key → count:
    ``coupling``: references shared with the paper (bibliographic coupling);
    ``co_citation``: papers citing both it and the paper;
    ``prior``: for each of the paper's own references, how many of its other references some third
    paper cites together with it (prior works are the most co-cited *among its references*);
    ``cites_paper``: keys among the above that cite the paper itself.
    Lists are capped by the store (the cap is part of its contract, documented in docs/citations.md).
    """

    coupling: dict[str, int] = field(default_factory=dict)
    co_citation: dict[str, int] = field(default_factory=dict)
    prior: dict[str, int] = field(default_factory=dict)
    cites_paper: frozenset[str] = frozenset()
    works: dict[str, WorkRef] = field(default_factory=dict)
    in_store: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class GraphNeighbourhood:
    """A paper's neighbours in the stored graph and theirs, for the graph list of similar papers
    (:func:`~paperfeed.domain.graph_similarity.rank_by_graph`).

    ``references``: works the paper cites; ``citers``: works citing it; ``cited_by[x]`` and ``cites[x]``:
    for each of those neighbours ``x``, the papers *of the store* citing it and cited by it (never the
    paper itself); ``degrees[x]``: ``x``'s references + citations (the larger of the edges stored and a
    source's reported total); ``in_store``: the neighbours that are papers of the store;
    ``citations[p]``: for every paper of the store named above, its citations (the larger of the edges
    stored and a source's reported total). Each list is capped by the store (the caps are part of its
    contract, documented in docs/citations.md).
    """

    references: frozenset[str] = frozenset()
    citers: frozenset[str] = frozenset()
    cited_by: dict[str, tuple[str, ...]] = field(default_factory=dict)
    cites: dict[str, tuple[str, ...]] = field(default_factory=dict)
    degrees: dict[str, int] = field(default_factory=dict)
    in_store: frozenset[str] = frozenset()
    citations: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SaveResult:
    papers: int
    edges_added: int
    works_added: int


class CitationRecords(Protocol):
    """The stored graph (SQLite and PostgreSQL, one contract)."""

    def save_links(
        self,
        links: Sequence[PaperLinks],
        *,
        harvested_at: datetime,
        checkpoint: tuple[str, str] | None = None,
    ) -> SaveResult:
        """Store every edge and work of ``links`` and mark each paper harvested from its source, in one
        transaction together with ``checkpoint`` (name, value): a kill leaves all of it or none.
        Duplicate edges (same pair, another source or a re-harvest) merge; self-citations are dropped."""
        ...

    def harvested(self, paper_ids: Sequence[str], source: str) -> dict[str, datetime]:
        """When each of ``paper_ids`` was last harvested from ``source`` (absent: never)."""
        ...

    def references(
        self, key: str, *, sort: CitationSort, in_store_only: bool, offset: int, limit: int
    ) -> GraphPage: ...

    def citations(
        self, key: str, *, sort: CitationSort, in_store_only: bool, offset: int, limit: int
    ) -> GraphPage: ...

    def counts(self, keys: Sequence[str], *, as_of: date) -> dict[str, LinkCounts]:
        """Counts for each key that has any edge or harvest record."""
        ...

    def related_counts(self, key: str, *, limit: int) -> RelatedCounts:
        """Overlaps around ``key`` (see :class:`RelatedCounts`), each list its ``limit`` best."""
        ...

    def neighbourhood(self, key: str) -> GraphNeighbourhood:
        """``key``'s neighbours and the papers of the store linked to them (see
        :class:`GraphNeighbourhood`); empty when ``key`` has no edge."""
        ...
