"""Similar papers as every surface shows them (the paper page, the API, MCP, ``paperfeed similar``).

Two stages (issue #43):

1. **Candidates**: the paper's named lists fused (:meth:`~paperfeed.services.search.HybridSearch.similar_to`:
   its text neighbours and, where citations are stored, its graph neighbours) over the visible papers.
2. **Sentences** (``PAPERFEED_SIMILAR_SENTENCE_*``): the first ``depth`` candidates re-ranked by weighted
   reciprocal rank fusion of their first-stage order (weight 1) and their order by the *late interaction*
   of the two papers' stored sentence vectors (:func:`~paperfeed.domain.sentences.max_sim`: each of this
   paper's sentences finds its best counterpart in the candidate; their mean), and, with a keyword
   weight, the order of the more-like-this keyword list of the paper's own words. Fused by rank, so the
   stage needs no calibration between a cosine, a graph score and a BM25 score, and holds for sentence
   vectors made either way (alone, or pooled from the abstract's own pass). A paper whose sentences are
   not indexed yet keeps its first-stage list; a candidate without sentences keeps its first-stage part.

The surface has read the paper (its page or its 404 needs it); the papers carry the counts pages show
(the visible-papers lookup). :class:`RankedSimilar` also hands the facets (services/facets.py) what the
stage read, so a facet list re-ranks the same candidates without reading their sentences again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

from paperfeed.domain.fusion import reciprocal_rank_fusion
from paperfeed.domain.models import Paper
from paperfeed.domain.results import SearchHit
from paperfeed.domain.search import EmbedderSource, ScoredId, SearchFilters
from paperfeed.domain.sentences import PaperSentences, SentenceStore, max_sim, sentence_model_id
from paperfeed.services.search import HybridSearch
from paperfeed.services.visible import VisiblePapers

__all__ = ["RankedSimilar", "SentenceStage", "SimilarPapers"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SentenceStage:
    """``PAPERFEED_SIMILAR_SENTENCE_*``; their one default is in ``settings_model.py``."""

    weight: float  # of the candidates' order by sentence max-sim (0: the stage is off)
    keyword_weight: float  # of the more-like-this keyword list of the paper's words (0: off)
    rrf_k: float
    depth: int  # first-stage candidates re-ranked


@dataclass
class RankedSimilar:
    """The overall list, best first, at the depth asked; ``own`` the paper's sentences and ``rows`` the
    candidates' (when the stage read them: the facets reuse them)."""

    hits: list[SearchHit]
    own: PaperSentences | None = None
    rows: dict[str, PaperSentences] = field(default_factory=dict)
    read: bool = False  # ``own`` was looked up (None then means: not indexed yet)


@dataclass(frozen=True)
class SimilarPapers:
    papers: VisiblePapers
    search: HybridSearch
    sentences: SentenceStore
    embedder: EmbedderSource  # the model whose sentences are read
    stage: SentenceStage

    def of(self, paper: Paper, limit: int = 10, filters: SearchFilters | None = None) -> list[SearchHit]:
        """The papers most like ``paper`` (a visible paper the caller read), best first."""
        return self.ranked(paper, limit, filters).hits[: max(0, limit)]

    def of_id(self, paper_id: str, limit: int = 10) -> list[SearchHit] | None:
        """:meth:`of` the paper ``paper_id`` (a canonical id); None when it is unknown or hidden."""
        paper = self.papers.paper(paper_id)
        return None if paper is None else self.of(paper, limit)

    def ranked(self, paper: Paper, depth: int, filters: SearchFilters | None = None) -> RankedSimilar:
        """The overall list at ``depth`` (at least the stage's own depth is ranked when it is on)."""
        stage = self.stage
        if depth <= 0:
            return RankedSimilar([])
        if stage.weight <= 0 and stage.keyword_weight <= 0:
            return RankedSimilar(self.search.similar_to(paper, depth, filters))
        first = self.search.similar_to(paper, max(depth, stage.depth), filters)
        head = first[: stage.depth]
        orders: list[list[ScoredId]] = [[ScoredId(h.paper.id, h.score) for h in head]]
        weights = [1.0]
        out = RankedSimilar(first)
        if stage.weight > 0:
            own, rows = self._sentences(paper, [h.paper.id for h in head])
            out.own, out.rows, out.read = own, rows, True
            if own is not None and own.vectors is not None and len(own.vectors) and rows:
                ids = [pid for pid in (h.paper.id for h in head) if pid in rows]
                vectors = [rows[pid].vectors for pid in ids]
                scores = max_sim(own.vectors, [v for v in vectors if v is not None])
                order = sorted(zip(ids, scores, strict=True), key=lambda x: -x[1])
                orders.append([ScoredId(pid, s) for pid, s in order])
                weights.append(stage.weight)
        if stage.keyword_weight > 0:
            shown = {h.paper.id for h in head}
            words = self.search.similar_keyword(paper, stage.depth, filters)
            orders.append([x for x in words if x.paper_id in shown])
            weights.append(stage.keyword_weight)
        if len(orders) == 1:
            return out
        by_id = {h.paper.id: h for h in head}
        fused = reciprocal_rank_fusion(orders, weights, k=stage.rrf_k)
        out.hits = [replace(by_id[f.paper_id], score=f.score) for f in fused] + first[stage.depth :]
        return out

    def _sentences(
        self, paper: Paper, ids: list[str]
    ) -> tuple[PaperSentences | None, dict[str, PaperSentences]]:
        """The paper's stored sentences and the candidates' (with vectors), of the model in use."""
        try:
            model_id = sentence_model_id(self.embedder.current().model_id)  # the sentence rows' space
            found = self.sentences.sentences([paper.id, *ids], model_id)
        except Exception as exc:  # an unreadable sentence store must not take similar papers down
            log.warning("similar papers without their sentences: %s", exc)
            return None, {}
        own = found.pop(paper.id, None)
        if own is not None and own.content_hash != paper.content_hash:
            own = None  # stale: the abstract changed since its sentences were made
        return own, {pid: r for pid, r in found.items() if r.vectors is not None and r.sentences}
