"""Similar papers by facet: by background, method or result rather than by topic (issue #33, part 4).

For a facet other than ``overall``, the query paper's sentences of that facet (their roles given by the
role classifier, :mod:`paperfeed.domain.sentences`) are matched against each candidate's sentences:

1. **Candidates**: the paper's overall similar list and the papers nearest to the mean of its facet
   sentences (a method described in a paper on another subject is still found), ``candidates`` each.
2. **Match**: each query sentence takes its best match among the candidate's sentences and the matches
   are averaged (``meanmax``: every part of the facet should be met, not one sentence alone). A
   candidate sentence may be weighted by its probability of having the facet's role, never below
   ``role_floor``; the default floor, 1, weighs them all the same (role weighting lost on SciFact).
3. **Score**: ``(1 - blend) × match + blend × cosine of the two papers``; the default blend, 0, keeps the
   list apart from the overall one.

Where the query paper has no sentence of the facet (or its sentences are not indexed yet), the overall
list is shown and the answer says so. Every choice above was measured (bench/facet_similar.py,
docs/search.md); each number is a ``PAPERFEED_SIMILAR_FACET_*`` setting.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from paperfeed.domain.models import Paper
from paperfeed.domain.results import SearchHit
from paperfeed.domain.search import EmbedderSource, SearchFilters, VectorIndex, VectorIndexError
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
from paperfeed.services.similar import SimilarPapers

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

    candidates: int  # from each of the two candidate lists
    blend: float  # share of the two papers' overall cosine in the score
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

    def of_id(self, paper_id: str, facet: Facet = "overall", limit: int = 10) -> FacetPage | None:
        """:meth:`of` the paper ``paper_id`` (a canonical id); None when it is unknown or hidden."""
        paper = self.similar.papers.paper(paper_id)
        return None if paper is None else self.of(paper, facet, limit)

    def of(
        self, paper: Paper, facet: Facet = "overall", limit: int = 10, filters: SearchFilters | None = None
    ) -> FacetPage:
        """Papers like ``paper`` (a visible paper the caller read) by ``facet``, best first."""
        search = self.similar.search
        if facet == "overall":
            return FacetPage(facet, facet, search.similar_to(paper, limit, filters))
        if limit <= 0:
            return FacetPage(facet, facet, [])
        model_id = sentence_model_id(self.embedder.current().model_id)  # the sentence rows' space
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
            return FacetPage(facet, "overall", search.similar_to(paper, limit, filters), note)
        s = self.settings
        pool = max(s.candidates, limit)
        overall = search.similar_to(paper, pool, filters)
        cosines = {h.paper.id: h.similarity for h in overall}
        papers = {h.paper.id: h.paper for h in overall}
        index = self._index()
        extra = self._facet_neighbours(index, query, pool, filters, paper.id)
        extra = [pid for pid in extra if pid not in papers]
        if extra:  # the visible-papers lookup leaves hidden ones out
            for pid, found in self.similar.papers.get(extra).items():
                if found.content_hash != paper.content_hash:
                    papers[pid] = found
        rows = self.sentences.sentences(list(papers), model_id)
        self._fill_cosines(index, paper.id, cosines, [pid for pid in papers if cosines.get(pid) is None])
        scored = self._score(query, facet, rows, cosines)
        hits: list[SearchHit] = []
        matched: dict[str, str] = {}
        for pid, score, sentence in scored[:limit]:
            found = papers[pid]
            hits.append(SearchHit(paper=found, score=score, similarity=cosines.get(pid)))
            if sentence is not None:
                matched[pid] = rows[pid].sentences[sentence].text(found.abstract)
        if len(hits) < limit:  # too few candidates with sentences: the overall list fills the rest
            shown = {h.paper.id for h in hits}
            hits.extend(h for h in overall if h.paper.id not in shown)
            hits = hits[:limit]
        return FacetPage(facet, facet, hits, None, matched)

    def _index(self) -> VectorIndex | None:
        try:
            index = self.similar.search.vectors.current()
        except VectorIndexError as exc:
            log.warning("similar papers by facet without the vector index: %s", exc)
            return None
        return index if index is not None and len(index) else None

    @staticmethod
    def _facet_neighbours(
        index: VectorIndex | None,
        query: object,
        pool: int,
        filters: SearchFilters | None,
        paper_id: str,
    ) -> list[str]:
        """Papers whose own vector is nearest to the mean of the query's facet sentences."""
        if index is None:
            return []
        import numpy as np

        centre = np.asarray(query, dtype=np.float32).mean(axis=0)
        norm = float(np.linalg.norm(centre))
        if norm == 0:
            return []
        try:
            return [x.paper_id for x in index.search(centre / norm, pool, filters, exclude=[paper_id])]
        except VectorIndexError as exc:
            log.warning("similar papers by facet without the facet's neighbours: %s", exc)
            return []

    @staticmethod
    def _fill_cosines(
        index: VectorIndex | None, paper_id: str, cosines: dict[str, float | None], ids: list[str]
    ) -> None:
        """The papers' overall cosine with ``paper_id`` for the candidates the overall list lacked."""
        if index is None or not ids:
            return
        import numpy as np

        try:
            own = index.vector(paper_id)
            found = index.vectors(ids) if own is not None else {}
        except VectorIndexError:
            return
        if own is None:
            return
        for pid, vector in found.items():
            cosines[pid] = float(np.dot(own, vector))

    def _score(
        self,
        query: object,
        facet: Facet,
        rows: dict[str, PaperSentences],
        cosines: dict[str, float | None],
    ) -> list[tuple[str, float, int | None]]:
        """(paper id, score, index of its best-matching sentence), best first; papers without sentences
        are left out (they cannot be judged on the facet)."""
        import numpy as np

        s = self.settings
        q = np.asarray(query, dtype=np.float32)
        items = [
            (pid, row.vectors, row) for pid, row in rows.items() if row.vectors is not None and row.sentences
        ]
        if not items:
            return []
        weights = [role_weights(row.sentences, facet, s.role_floor) for _, _, row in items]
        matches = facet_scores(q, [(v, w) for (_, v, _), w in zip(items, weights, strict=True)], s.aggregate)
        out: list[tuple[str, float, int | None]] = []
        for (pid, vectors, _), w, match in zip(items, weights, matches, strict=True):
            cosine = cosines.get(pid)
            score = match if cosine is None else (1 - s.blend) * match + s.blend * cosine
            sims = (q @ vectors.T) * np.asarray(w, dtype=np.float32)[None, :]
            out.append((pid, score, int(sims.max(axis=0).argmax())))
        out.sort(key=lambda x: -x[1])
        return out
