"""The citation graph as a list of "similar papers" (issue #33): a
:class:`~paperfeed.domain.search.SimilarSource` that :class:`~paperfeed.services.search.HybridSearch`
fuses beside the embedding neighbours, with the weight ``PAPERFEED_SIMILAR_GRAPH_WEIGHT``.

It ranks the papers of the store linked to the paper directly or through one shared neighbour
(co-citation, bibliographic coupling, chains), each shared neighbour weighted down by how many papers
it links (:func:`~paperfeed.domain.graph_similarity.rank_by_graph`), and gives every paper its reasons
("cited together with it by 12 papers"). A paper without edges gets an empty list, so its similar papers
are exactly the other lists.
"""

from __future__ import annotations

from dataclasses import dataclass

from paperfeed.domain.graph_similarity import GraphEvidence, matches_filters, rank_by_graph
from paperfeed.domain.paper_graph import CitationRecords, work_key
from paperfeed.domain.ports import PaperLookup
from paperfeed.domain.search import ExplainedId, ScoredId, SearchFilters

__all__ = ["GraphSimilar"]

_FILTER_CHUNK = 500  # papers read at once when filters must be checked


@dataclass
class GraphSimilar:
    """The graph neighbourhood of a paper, ranked, restricted to papers of the store."""

    records: CitationRecords
    store: PaperLookup

    @property
    def name(self) -> str:
        return "graph"

    def evidence(self, paper_id: str) -> list[GraphEvidence]:
        """Every paper of the store linked to ``paper_id`` in the graph, best first, with its counts."""
        key = work_key(arxiv_id=paper_id)
        if key is None:  # not an arXiv paper: the graph keys it by nothing the store has
            return []
        return rank_by_graph(key, self.records.neighbourhood(key))

    def related(self, paper_id: str, k: int, filters: SearchFilters | None = None) -> list[ScoredId]:
        if k <= 0:
            return []
        ranked = self.evidence(paper_id)
        if filters is not None and filters.active:
            ranked = self._filtered(ranked, k, filters)
        return [ExplainedId(e.key, e.score, e.reasons()) for e in ranked[:k]]

    def _filtered(self, ranked: list[GraphEvidence], k: int, filters: SearchFilters) -> list[GraphEvidence]:
        kept: list[GraphEvidence] = []
        for start in range(0, len(ranked), _FILTER_CHUNK):
            part = ranked[start : start + _FILTER_CHUNK]
            papers = self.store.get_papers([e.key for e in part])
            kept += [e for e in part if (p := papers.get(e.key)) is not None and matches_filters(p, filters)]
            if len(kept) >= k:
                break
        return kept
