"""Similar papers as every surface shows them (the paper page, the API, MCP, ``paperfeed similar``).

The surface has read the paper (its page or its 404 needs it); the list is its named lists fused
(:meth:`~paperfeed.services.search.HybridSearch.similar_to`) over the visible papers, each with the
counts pages show. One place, where the paper is read once and the counts added once (issue #32).
"""

from __future__ import annotations

from dataclasses import dataclass

from paperfeed.domain.models import Paper
from paperfeed.domain.results import SearchHit
from paperfeed.services.search import HybridSearch
from paperfeed.services.visible import VisiblePapers

__all__ = ["SimilarPapers"]


@dataclass(frozen=True)
class SimilarPapers:
    papers: VisiblePapers
    search: HybridSearch

    def of(self, paper: Paper, limit: int = 10) -> list[SearchHit]:
        """The papers most like ``paper`` (a visible paper the caller read), best first."""
        return self.search.similar_to(paper, limit)

    def of_id(self, paper_id: str, limit: int = 10) -> list[SearchHit] | None:
        """:meth:`of` the paper ``paper_id`` (a canonical id); None when it is unknown or hidden."""
        paper = self.papers.paper(paper_id)
        return None if paper is None else self.of(paper, limit)
