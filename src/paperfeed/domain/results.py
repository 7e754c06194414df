"""What searching returns to surfaces (web, API, CLI, recommendations), and the port that returns it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from .models import Paper
from .search import Reason, SearchFilters, Span

__all__ = ["PaperSearch", "SearchHit", "SearchPage"]


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One ranked result; spans mark the query's matches in the title and abstract for highlighting."""

    paper: Paper
    score: float
    title_spans: tuple[Span, ...] = ()
    abstract_spans: tuple[Span, ...] = ()
    keyword_rank: int | None = None  # 1-based rank in the keyword list, if it was there
    dense_rank: int | None = None  # 1-based rank in the embedding list, if it was there
    similarity: float | None = None  # similar papers: cosine of the two papers' embeddings, if both have one
    reasons: tuple[Reason, ...] = ()  # similar papers: why it is there, from the citation graph


@dataclass(frozen=True, slots=True)
class SearchPage:
    query: str
    hits: tuple[SearchHit, ...]
    total: int  # number of results available for paging (after the relevance cut-off)
    offset: int = 0
    limit: int = 20
    notes: tuple[str, ...] = field(default=())  # e.g. "semantic search unavailable: index missing"
    # a candidate list was cut at its size: ``total`` is the best matches, and more papers may match
    capped: bool = False


class PaperSearch(Protocol):
    """The search service as surfaces see it."""

    def search(
        self, query: str, filters: SearchFilters | None = None, limit: int = 20, offset: int = 0
    ) -> SearchPage: ...

    def similar(
        self, paper_id: str, limit: int = 10, filters: SearchFilters | None = None
    ) -> list[SearchHit]:
        """Papers most like one paper (its embedding neighbours re-ranked by their small neighbourhoods,
        blended with their own cosine; its own words when it has no vector yet), excluding the paper
        itself and its exact duplicates."""
        ...
