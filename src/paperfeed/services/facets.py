"""Similar papers by facet: by background, method or result, as a better overall list rather than another
list (issue #43; issue #33 part 4 made the facets).

For a facet other than ``overall``, the overall similar list (services/similar.py: text and graph
neighbours, re-ranked by the two papers' sentences) is re-ranked by the facet:

1. **Candidates**: the overall list's first ``candidates`` papers, never papers it does not hold: a paper
   with the same method on another topic is rarely what a reader asking for "same method" wants (expert
   judgments of faceted similarity rated a list drawn by the facet alone half as good as the overall one).
2. **Match**: the query paper's sentences of the facet (background: its background and objective
   sentences; method; result), each taking its best match among the candidate's sentences, averaged
   (``meanmax``; a candidate sentence may be weighted by its probability of the facet's role, never below
   ``role_floor``; the default, 1, weighs them all the same).
3. **Score**: weighted reciprocal rank fusion of the overall order (weight 1) and the order by the match
   (``weight``), with ``rrf_k``: a paper high on both comes first, one high on the match alone climbs
   only as far as its overall place allows. By rank, so it holds for sentence vectors made either way.

Where the query paper has no sentence of the facet (or its sentences are not indexed yet), the overall
list is shown and the answer says so. Every choice above was measured (bench/facet_similar.py,
docs/search.md); each number is a ``PAPERFEED_SIMILAR_FACET_*`` setting.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from paperfeed.domain.fusion import reciprocal_rank_fusion
from paperfeed.domain.models import Paper
from paperfeed.domain.results import SearchHit
from paperfeed.domain.search import EmbedderSource, ScoredId, SearchFilters
from paperfeed.domain.sentences import (
    Facet,
    FacetAggregate,
    PaperSentences,
    SentenceStore,
    facet_query,
    facet_scores,
    role_weights,
    sentence_model_id,
)
from paperfeed.domain.wording import count
from paperfeed.services.similar import SimilarPapers

if TYPE_CHECKING:
    from paperfeed.domain.search import Vectors

__all__ = ["FacetPage", "FacetSettings", "FacetedSimilar"]

log = logging.getLogger(__name__)

FACET_WORDS: dict[Facet, str] = {
    "overall": "overall",
    "background": "background or aim",
    "method": "method",
    "result": "result",
}


@dataclass(frozen=True, slots=True)
class FacetSettings:
    """``PAPERFEED_SIMILAR_FACET_*``; their one default is in ``settings_model.py``."""

    candidates: int  # the overall list's first papers that the facet re-ranks
    weight: float  # of the order by the facet's sentence match, against the overall order's 1
    rrf_k: float
    role_floor: float  # least weight of a candidate sentence of another role (1: role-blind)
    aggregate: FacetAggregate


@dataclass(frozen=True, slots=True)
class FacetPage:
    """Similar papers by ``asked``; ``facet`` is what the list is (``overall`` when it fell back, with
    ``note`` saying why); ``matched`` the sentence of each paper that best matches the facet."""

    asked: Facet
    facet: Facet
    hits: list[SearchHit]
    note: str | None = None
    matched: dict[str, str] = field(default_factory=dict)


@dataclass
class FacetedSimilar:
    """Similar papers by facet over the overall similar papers (``similar``) and the stored sentences."""

    similar: SimilarPapers
    sentences: SentenceStore
    embedder: EmbedderSource  # the current embedding model (sentences of another are not read)
    settings: FacetSettings

    def explain(self, facet: Facet) -> str:
        """What the list ``facet`` is, in a reader's words (the paper page shows it under the switch)."""
        if facet == "overall":
            return (
                "Ranked by how alike the two papers read (their whole text, then sentence by sentence) and, "
                "where citations are stored, by the papers they are cited with."
            )
        return (
            f"The overall list's first {count(self.settings.candidates, 'paper')}, reordered by how well "
            f"their sentences match the sentences of this paper's {FACET_WORDS[facet]}: a paper rises when "
            "it is close overall and matches on that part too. Under each, its sentence that matched best."
        )

    def of_id(self, paper_id: str, facet: Facet = "overall", limit: int = 10) -> FacetPage | None:
        """:meth:`of` the paper ``paper_id`` (a canonical id); None when it is unknown or hidden."""
        paper = self.similar.papers.paper(paper_id)
        return None if paper is None else self.of(paper, facet, limit)

    def of(
        self, paper: Paper, facet: Facet = "overall", limit: int = 10, filters: SearchFilters | None = None
    ) -> FacetPage:
        """Papers like ``paper`` (a visible paper the caller read) by ``facet``, best first."""
        if limit <= 0:
            return FacetPage(facet, facet, [])
        if facet == "overall":
            return FacetPage(facet, facet, self.similar.of(paper, limit, filters))
        s = self.settings
        ranked = self.similar.ranked(paper, max(s.candidates, limit), filters)
        model_id = sentence_model_id(self.embedder.current().model_id)  # the sentence rows' space
        own = ranked.own
        if not ranked.read:
            own = self.sentences.sentences([paper.id], model_id).get(paper.id)
        query = facet_query(own, facet) if own is not None else None
        if own is None or query is None:
            if own is None:
                note = (
                    "This paper's sentences are not indexed yet (the indexer does them after the papers' "
                    "vectors), so these are the overall similar papers."
                )
            else:
                note = (
                    f"No sentence of this paper's abstract states its {FACET_WORDS[facet]}, so these are "
                    "the overall similar papers."
                )
            return FacetPage(facet, "overall", ranked.hits[:limit], note)
        head = ranked.hits[: s.candidates]
        rows = dict(ranked.rows)
        missing = [h.paper.id for h in head if h.paper.id not in rows]
        if missing:
            found = self.sentences.sentences(missing, model_id)
            rows.update({pid: r for pid, r in found.items() if r.vectors is not None and r.sentences})
        scored = self._score(query, facet, {h.paper.id: rows[h.paper.id] for h in head if h.paper.id in rows})
        by_id = {h.paper.id: h for h in head}
        fused = reciprocal_rank_fusion(
            [[ScoredId(h.paper.id, h.score) for h in head], [ScoredId(pid, x) for pid, x, _ in scored]],
            [1.0, s.weight],
            k=s.rrf_k,
        )
        hits = [replace(by_id[f.paper_id], score=f.score) for f in fused][:limit]
        if len(hits) < limit:  # the facet re-ranks the head; the overall list's tail follows as it is
            hits.extend(ranked.hits[s.candidates : s.candidates + limit - len(hits)])
        matched: dict[str, str] = {}
        best = {pid: sentence for pid, _, sentence in scored}
        for hit in hits:
            sentence = best.get(hit.paper.id)
            if sentence is not None:
                matched[hit.paper.id] = rows[hit.paper.id].sentences[sentence].text(hit.paper.abstract)
        return FacetPage(facet, facet, hits, None, matched)

    def _score(
        self, query: Vectors, facet: Facet, rows: dict[str, PaperSentences]
    ) -> list[tuple[str, float, int]]:
        """(paper id, facet match, index of its best-matching sentence), best match first; papers
        without sentences are left out (they cannot be judged on the facet)."""
        import numpy as np

        s = self.settings
        items = [(pid, row) for pid, row in rows.items() if row.vectors is not None and row.sentences]
        if not items:
            return []
        weights = [role_weights(row.sentences, facet, s.role_floor) for _, row in items]
        vectors = [row.vectors for _, row in items]
        matches = facet_scores(
            query, [(v, w) for v, w in zip(vectors, weights, strict=True) if v is not None], s.aggregate
        )
        out: list[tuple[str, float, int]] = []
        for (pid, row), w, match in zip(items, weights, matches, strict=True):
            assert row.vectors is not None
            sims = (query @ row.vectors.T) * np.asarray(w, dtype=np.float32)[None, :]
            out.append((pid, match, int(sims.max(axis=0).argmax())))
        out.sort(key=lambda x: -x[1])
        return out
