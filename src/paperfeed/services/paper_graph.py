"""Reading the paper graph for one paper: its counts, references, cited-by and related work (issue #16).

The pages, the JSON API and ``/papers/{id}.md`` all ask this service; it reads the stored graph through
:class:`~paperfeed.domain.paper_graph.CitationRecords` and the papers of this instance through two
lookups bootstrap hands in (both leave out papers an administrator hid). A work the graph marks as in
the store but the lookup does not return (hidden since) is shown like any outside work.

Errors: :class:`~paperfeed.domain.related_work.UnknownPaper` for a paper not in this instance (404),
:class:`~paperfeed.domain.ids.InvalidPaperId` for text that is no id and ``ValueError`` for an
out-of-range ``offset``/``limit`` (400).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from paperfeed.domain.ids import InvalidPaperId, normalize_paper_id, parse_arxiv_id
from paperfeed.domain.models import Paper
from paperfeed.domain.paper_graph import (
    CitationRecords,
    CitationSort,
    GraphRow,
    LinkCounts,
    work_key,
)
from paperfeed.domain.related_work import RelatedRules, RelatedWork, UnknownPaper, rank_related
from paperfeed.services.visible import VisiblePapers

__all__ = [
    "MAX_LIMIT",
    "MAX_OFFSET",
    "RELATED_POOL",
    "GraphEntry",
    "GraphListing",
    "GraphSummary",
    "PaperGraphService",
    "RelatedListing",
    "paper_key",
]

MAX_LIMIT = 100  # entries per page of a references / cited-by list
MAX_OFFSET = 1_000_000
RELATED_POOL = 200  # the ``limit`` asked of CitationRecords.related_counts, per overlap list

_NO_COUNTS = LinkCounts(references=0, citations=0, citations_last_12_months=0)


def paper_key(paper: Paper) -> str:
    """The graph's key of a paper of the store: its arXiv id, else its DOI key, else its own id."""
    try:
        return parse_arxiv_id(paper.id).base
    except InvalidPaperId:
        return work_key(doi=paper.doi) or paper.id


@dataclass(frozen=True, slots=True)
class GraphEntry:
    """A row of a list, with the store's paper when the work is a (visible) paper of this instance."""

    row: GraphRow
    paper: Paper | None

    @property
    def in_store(self) -> bool:
        return self.paper is not None


@dataclass(frozen=True, slots=True)
class GraphSummary:
    paper: Paper
    key: str
    counts: LinkCounts
    has_data: bool  # any edge or harvest record at all


@dataclass(frozen=True, slots=True)
class GraphListing:
    paper: Paper
    entries: tuple[GraphEntry, ...]
    total: int
    offset: int
    limit: int
    sort: CitationSort
    in_store_only: bool


@dataclass(frozen=True, slots=True)
class RelatedListing:
    paper: Paper
    related: RelatedWork
    papers: dict[str, Paper]  # the visible papers of this instance among the entries, by key


class PaperGraphService:
    """Read side of the citation graph. Thread-safe (holds no state of its own)."""

    def __init__(
        self,
        records: CitationRecords,
        papers: VisiblePapers,  # the instance's papers as shown (hidden ones are not in the graph's pages)
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        rules: RelatedRules | None = None,
        related_pool: int = RELATED_POOL,
    ) -> None:
        self.records = records
        self.papers = papers
        self.clock = clock
        self.rules = rules or RelatedRules()
        self.related_pool = related_pool

    def find(self, paper_id: str) -> Paper:
        """The paper of this instance with id ``paper_id`` (any spelling), or :class:`UnknownPaper`."""
        base = normalize_paper_id(paper_id).base
        found = self.papers.paper(base)
        if found is None:
            raise UnknownPaper(base)
        return found

    def summary(self, paper_id: str) -> GraphSummary:
        """The paper's counts (zeros and ``has_data=False`` when the graph knows nothing of it)."""
        paper = self.find(paper_id)
        key = paper_key(paper)
        counts = self.records.counts([key], as_of=self.clock().date()).get(key)
        return GraphSummary(paper, key, counts or _NO_COUNTS, counts is not None)

    def references(
        self,
        paper_id: str,
        *,
        sort: CitationSort = CitationSort.CITATIONS,
        in_store_only: bool = False,
        offset: int = 0,
        limit: int = 20,
    ) -> GraphListing:
        """What the paper cites, ``limit`` from ``offset``."""
        return self._listing(paper_id, True, sort, in_store_only, offset, limit)

    def citations(
        self,
        paper_id: str,
        *,
        sort: CitationSort = CitationSort.DATE,
        in_store_only: bool = False,
        offset: int = 0,
        limit: int = 20,
    ) -> GraphListing:
        """The works that cite the paper, ``limit`` from ``offset``."""
        return self._listing(paper_id, False, sort, in_store_only, offset, limit)

    def related(self, paper_id: str, *, per_list: int | None = None) -> RelatedListing:
        """Prior works, derivative works and shared-reference works, ranked and explained; each list
        ``per_list`` long at most (default: the rules'), which cannot exceed the store's pool."""
        rules = self.rules if per_list is None else replace(self.rules, per_list=per_list)
        if not 1 <= rules.per_list <= self.related_pool:
            raise ValueError(f"per_list must be between 1 and {self.related_pool}, got {rules.per_list}")
        paper = self.find(paper_id)
        key = paper_key(paper)
        counts = self.records.related_counts(key, limit=self.related_pool)
        published = paper.published.date() if paper.published else None
        related = rank_related(key, counts, published=published, rules=rules)
        shown = self.papers.get([e.key for e in related.all() if e.in_store])
        return RelatedListing(paper, related, shown)

    def _listing(
        self,
        paper_id: str,
        references: bool,
        sort: CitationSort,
        in_store_only: bool,
        offset: int,
        limit: int,
    ) -> GraphListing:
        if not 1 <= limit <= MAX_LIMIT:
            raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
        if not 0 <= offset <= MAX_OFFSET:
            raise ValueError(f"offset must be between 0 and {MAX_OFFSET:,}, got {offset}")
        paper = self.find(paper_id)
        read = self.records.references if references else self.records.citations
        page = read(paper_key(paper), sort=sort, in_store_only=in_store_only, offset=offset, limit=limit)
        shown = self.papers.get([row.work.key for row in page.rows if row.in_store])
        entries = tuple(GraphEntry(row, shown.get(row.work.key)) for row in page.rows)
        return GraphListing(paper, entries, page.total, offset, limit, sort, in_store_only)
