"""The citation graph as a list of "similar papers" (issue #16): a
:class:`~paperfeed.domain.search.SimilarSource` that :class:`~paperfeed.services.search.HybridSearch`
fuses beside the embedding neighbours and the keyword list, with the weight
``PAPERFEED_SIMILAR_GRAPH_WEIGHT``.

It ranks the papers of the store that share references with the paper or are cited together with it
(:func:`~paperfeed.domain.graph_similarity.rank_graph_similar`, Salton's cosine of each overlap). A paper
without edges gets an empty list, so the fusion is exactly the embedding + keyword one there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime

from paperfeed.domain.graph_similarity import matches_filters, rank_graph_similar
from paperfeed.domain.paper_graph import CitationRecords, work_key
from paperfeed.domain.ports import PaperStore
from paperfeed.domain.search import ScoredId, SearchFilters

__all__ = ["GraphSimilar"]


def _today() -> date:
    return datetime.now(UTC).date()


@dataclass
class GraphSimilar:
    """Co-citation + bibliographic coupling around a paper, restricted to papers of the store.

    ``overlap_limit`` is how many works of each overlap list the store returns
    (``related_counts(limit=…)``); the fused list never needs more than the search's candidate pool.
    """

    records: CitationRecords
    store: PaperStore
    today: Callable[[], date] = _today
    overlap_limit: int = 200

    @property
    def name(self) -> str:
        return "graph"

    def related(self, paper_id: str, k: int, filters: SearchFilters | None = None) -> list[ScoredId]:
        key = work_key(arxiv_id=paper_id)
        if key is None or k <= 0:  # not an arXiv paper: the graph keys it by nothing the store has
            return []
        related = self.records.related_counts(key, limit=max(self.overlap_limit, k))
        if not related.coupling and not related.co_citation:
            return []
        candidates = (set(related.coupling) | set(related.co_citation)) & related.in_store
        candidates.discard(key)
        if not candidates:
            return []
        counts = self.records.counts([key, *sorted(candidates)], as_of=self.today())
        ranked = rank_graph_similar(key, related, counts)
        if filters is not None and filters.active:
            papers = self.store.get_papers([other for other, _ in ranked])
            ranked = [
                (other, score)
                for other, score in ranked
                if (p := papers.get(other)) is not None and matches_filters(p, filters)
            ]
        return [ScoredId(other, score) for other, score in ranked[:k]]
