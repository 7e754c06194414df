"""Hybrid search: BM25 keyword results and embedding nearest neighbours, fused by weighted RRF.

* Plain queries: the keyword engine and the vector index each return their best candidates (both
  honour the filters inside the engine, so selective filters never starve), dense candidates below a
  cosine floor are dropped (the relevance cut-off: nonsense queries return little, not 100 random
  papers), and the two lists are fused with reciprocal rank fusion.
* Queries with hard constraints (an "exact phrase", ``author:``, ``-excluded``): only the keyword engine
  can enforce them, so its matches form the candidate pool and the dense list re-ranks that pool by
  cosine similarity before fusing.
* A topic filter (``topic:12`` in the query, or a request filter) becomes an allow-list of the topic's
  papers (``topic_members``, which follows a removed topic to its successor) that every engine applies
  like the other filters; an unknown topic matches nothing and says so in the notes.
* When the vector index or the embedder is unavailable, search degrades to keyword-only and says so in
  ``SearchPage.notes`` rather than failing.

Similar papers fuse, by the same weighted RRF, named lists about one paper: its embedding neighbours
("dense"), a more-like-this keyword query built from its own title and abstract ("keyword"), and any
further :class:`~paperfeed.domain.search.SimilarSource` (co-citation, coupling). Weights, k and pool
sizes are :class:`SimilarSettings` (settings chosen on the train split of bench/similar_quality.py). The dense
list is re-ranked by neighbourhoods (:mod:`paperfeed.domain.neighbourhood`) before fusion. Either of
the two built-in lists may be missing (nothing embedded yet, a damaged keyword index): the others
still answer.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from paperfeed.domain.embedding import embedding_text
from paperfeed.domain.fusion import (
    FusedId,
    WeightedList,
    blend_evidence,
    fuse_weighted,
    reciprocal_rank_fusion,
)
from paperfeed.domain.models import Paper
from paperfeed.domain.neighbourhood import rerank_by_neighbourhood
from paperfeed.domain.query import parse_query, with_filters
from paperfeed.domain.results import SearchHit, SearchPage
from paperfeed.domain.search import (
    MODEL_LOADING_NOTE,
    EmbedderSource,
    ExplainedId,
    KeywordIndex,
    KeywordIndexUnavailable,
    ParsedQuery,
    Reason,
    ScoredId,
    SearchFilters,
    SimilarSource,
    TopicMembers,
    VectorIndex,
    VectorIndexError,
    VectorSource,
)
from paperfeed.services.visible import VisiblePapers

if TYPE_CHECKING:  # the vector type needs NumPy, which a keyword-only search never imports
    from paperfeed.domain.search import Vectors

__all__ = ["HybridSearch", "HybridSettings", "SimilarSettings"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Embedded:
    """A query's vector, the model that made it, or why there is none."""

    vector: Vectors | None
    model_id: str | None
    error: str | None


@dataclass(frozen=True, slots=True)
class HybridSettings:
    """How search fuses its two lists. The first four are settings (``PAPERFEED_SEARCH_*``), whose one
    default is in ``settings_model.py``: the composition root passes them, so they have none here."""

    rrf_k: float
    keyword_weight: float
    dense_weight: float
    min_dense_score: float  # cosine floor for dense candidates (the relevance cut-off)
    candidates: int = 100  # per list, before fusion
    duplicate_cosine: float = 0.9999  # "similar papers" treats anything this close as the same paper


@dataclass(frozen=True, slots=True)
class SimilarSettings:
    """How "similar papers" ranks and fuses its lists: every field is a ``PAPERFEED_SIMILAR_*`` setting,
    whose one default (chosen on the train papers of bench/similar_quality.py) is in
    ``settings_model.py``; the composition root passes them, so they have none here."""

    rrf_k: float
    dense_weight: float
    keyword_weight: float
    candidates: int  # per list, before fusion
    keyword_terms: int  # terms of the paper's text in its more-like-this query
    neighbourhood: int  # re-rank the dense list by neighbourhoods of this many (0: plain cosine)
    neighbourhood_power: float  # a neighbour's weight in a neighbourhood: cosine ** power
    neighbourhood_blend: float  # share of the smoothed cosine in the score; the rest is the plain one


@dataclass
class HybridSearch:
    """:class:`~paperfeed.domain.results.PaperSearch` over a keyword index, a vector index and an embedder.

    Papers are read through ``papers``, the visible-papers lookup: hidden papers never rank, hits carry
    the counts pages show. ``vectors`` and ``embedder`` are asked at each use: loading a model or a
    large index is slow, so it happens on first use (inside them), and a failure there only disables
    dense search. No ``embedder``: keyword search only.
    """

    papers: VisiblePapers
    keyword: KeywordIndex
    vectors: VectorSource
    embedder: EmbedderSource | None
    settings: HybridSettings
    similar_settings: SimilarSettings
    similar_sources: tuple[tuple[SimilarSource, float], ...] = ()  # further lists, each with its weight
    # lists whose scores are evidence added to the cosine (the citation graph), each with its weight
    similar_evidence: tuple[tuple[SimilarSource, float], ...] = ()
    topics: TopicMembers | None = None  # a topic filter's papers (None: every topic is unknown)
    # query text -> (the model that embedded it, its vector): an adopted model makes the old ones stale
    _query_cache: OrderedDict[str, tuple[str, Vectors]] = field(default_factory=OrderedDict, init=False)
    _pending: dict[str, Future[_Embedded]] = field(default_factory=dict, init=False)
    _pool: ThreadPoolExecutor | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    # -- public API -----------------------------------------------------------------------------------

    def search(
        self, query: str, filters: SearchFilters | None = None, limit: int = 20, offset: int = 0
    ) -> SearchPage:
        return self.search_parsed(with_filters(parse_query(query), filters), limit, offset, query=query)

    def search_parsed(
        self, parsed: ParsedQuery, limit: int = 20, offset: int = 0, *, query: str | None = None
    ) -> SearchPage:
        """:meth:`search` of a query already parsed."""
        query = parsed.raw if query is None else query
        limit, offset = max(0, limit), max(0, offset)
        if parsed.empty:
            return SearchPage(query, (), 0, offset, limit)
        notes: list[str] = []
        parsed = self._with_topic(parsed, notes)
        fused, capped = self._fused(parsed, max(self.settings.candidates, offset + limit), notes)
        hidden = self.papers.hidden()
        if hidden:
            fused = [f for f in fused if f.paper_id not in hidden]
        window = fused[offset : offset + limit]
        papers = self.papers.get([f.paper_id for f in window])
        hits = []
        for f in window:
            paper = papers.get(f.paper_id)
            if paper is None:  # deleted since it was indexed
                continue
            hits.append(
                SearchHit(
                    paper=paper,
                    score=f.score,
                    title_spans=tuple(self.keyword.highlight(parsed, paper.title)),
                    abstract_spans=tuple(self.keyword.highlight(parsed, paper.abstract)),
                    keyword_rank=f.ranks[0],
                    dense_rank=f.ranks[1] if len(f.ranks) > 1 else None,
                )
            )
        return SearchPage(query, tuple(hits), len(fused), offset, limit, tuple(notes), capped)

    def ranking(self, parsed: ParsedQuery, notes: list[str]) -> list[str]:
        """The ids of the papers :meth:`search` would rank for ``parsed``, best first, unread (hidden ones
        included: the caller drops them): evidence search's prior, which needs no paper's text."""
        if parsed.empty:
            return []
        fused, _ = self._fused(self._with_topic(parsed, notes), self.settings.candidates, notes)
        return [f.paper_id for f in fused]

    def _fused(self, parsed: ParsedQuery, pool: int, notes: list[str]) -> tuple[list[FusedId], bool]:
        """The keyword and semantic lists fused (best first), and whether a list was cut at ``pool``."""
        # The semantic leg (query embedding + nearest neighbours) runs on a second thread while the
        # keyword engine searches: ONNX Runtime, faiss and tantivy all release the GIL, so on two cores
        # the legs overlap instead of adding. Hard constraints make the dense list a re-ranking of the
        # keyword matches, so there only the embedding can start early.
        dense_leg: Future[tuple[list[ScoredId] | None, list[str]]] | None = None
        if parsed.text:
            if parsed.constrained:
                self._start_embedding(parsed.text)
            else:
                dense_leg = self._executor().submit(self._dense_alone, parsed, pool)
        try:
            keyword = self.keyword.search(parsed, pool)
        except KeywordIndexUnavailable as exc:  # damaged files: semantic results only until a repair
            log.warning("keyword search failed, using semantic results only: %s", exc)
            notes.append("keyword search is unavailable right now; showing semantic matches only")
            keyword = []
        if dense_leg is not None:
            dense, dense_notes = dense_leg.result()
            notes.extend(dense_notes)
        else:
            dense = self._dense(parsed, pool, keyword, notes)
        lists = [keyword] if dense is None else [keyword, dense]
        weights = [self.settings.keyword_weight] + ([] if dense is None else [self.settings.dense_weight])
        fused = reciprocal_rank_fusion(lists, weights, k=self.settings.rrf_k)
        capped = len(keyword) >= pool or (dense is not None and len(dense) >= pool)  # more may match
        return fused, capped

    def similar(
        self, paper_id: str, limit: int = 10, filters: SearchFilters | None = None
    ) -> list[SearchHit]:
        """Papers most like ``paper_id`` (:meth:`similar_to`); none for an unknown or hidden paper."""
        hidden = self.papers.hidden()
        paper = self.papers.get([paper_id]).get(paper_id)
        return [] if paper is None else self.similar_to(paper, limit, filters, hidden=hidden)

    def similar_to(
        self,
        paper: Paper,
        limit: int = 10,
        filters: SearchFilters | None = None,
        *,
        hidden: frozenset[str] | None = None,
    ) -> list[SearchHit]:
        """Papers most like ``paper`` (a visible paper the caller read): its named lists fused (see the
        module doc), best first; never the paper itself, its duplicates (same text, or embeddings this
        close) or hidden papers (``hidden``: their ids, when the caller read them already).

        ``score`` is the fused score; ``similarity`` the cosine of the two papers' embeddings when both
        are embedded; ``dense_rank``/``keyword_rank`` the ranks in those lists.
        """
        hidden = self.papers.hidden() if hidden is None else hidden
        if paper.id in hidden or limit <= 0:
            return []
        s = self.similar_settings
        pool = max(s.candidates, limit + 10)
        index = self._vector_index([])
        vector = self._paper_vector(index, paper)
        dense = self._similar_dense(index, vector, paper, pool, filters)
        same = {paper.id} | {x.paper_id for x in dense if x.score >= self.settings.duplicate_cosine}
        read: dict[str, Vectors] = {}  # candidates' vectors the re-ranking read: the cosines reuse them
        if s.neighbourhood > 0 and index is not None and vector is not None:
            dense, read = self._by_neighbourhood(index, vector, [x for x in dense if x.paper_id not in same])
        keyword_weight = s.keyword_weight
        if keyword_weight <= 0 and not dense:  # nothing embedded (yet): the keyword list, not nothing
            keyword_weight = 1.0
        lists = [
            WeightedList("dense", s.dense_weight, dense),
            WeightedList(
                "keyword", keyword_weight, self._similar_keyword(paper, pool, filters, keyword_weight)
            ),
        ]
        reasons: dict[str, tuple[Reason, ...]] = {}
        for source, weight in self.similar_sources:
            items = self._related(source, paper.id, pool, filters, reasons)
            lists.append(WeightedList(source.name, weight, items))
        evidence: list[tuple[float, dict[str, float]]] = []
        for source, weight in self.similar_evidence:
            items = self._related(source, paper.id, pool, filters, reasons) if weight > 0 else []
            if items:
                evidence.append((weight, {x.paper_id: x.score for x in items}))
        dropped = same | hidden
        fused = [f for f in fuse_weighted(lists, k=s.rrf_k) if f.paper_id not in dropped]
        cosines: dict[str, float] = {}
        if evidence:  # the paper has links: its text list and theirs, by cosine + evidence
            candidates = [f.paper_id for f in fused[:pool]]
            candidates += [pid for _, found in evidence for pid in found if pid not in dropped]
            candidates = list(dict.fromkeys(candidates))
            cosines = self._cosines(index, vector, candidates, read)
            order = blend_evidence(candidates, cosines, evidence)
        else:  # no links (or no graph): the text lists' fusion, as it has always been
            order = [ScoredId(f.paper_id, f.score) for f in fused]
        window = order[: limit + 10]  # room for duplicates found by their text below
        papers = self.papers.get([x.paper_id for x in window])
        if not evidence:
            cosines = self._cosines(index, vector, [x.paper_id for x in window], read)
        ranks = {f.paper_id: f.ranks for f in fused}
        hits: list[SearchHit] = []
        for x in window:
            other = papers.get(x.paper_id)
            if other is None or other.content_hash == paper.content_hash:
                continue
            found = ranks.get(x.paper_id, (None, None))
            hits.append(
                SearchHit(
                    paper=other,
                    score=x.score,
                    dense_rank=found[0],
                    keyword_rank=found[1],
                    similarity=cosines.get(other.id),
                    reasons=reasons.get(other.id, ()),
                )
            )
            if len(hits) == limit:
                break
        return hits

    @staticmethod
    def _related(
        source: SimilarSource,
        paper_id: str,
        pool: int,
        filters: SearchFilters | None,
        reasons: dict[str, tuple[Reason, ...]],
    ) -> list[ScoredId]:
        """``source``'s list for the paper (empty when it fails: one failing source must not take similar
        papers down), its items' reasons noted in ``reasons``."""
        try:
            items = source.related(paper_id, pool, filters)
        except Exception as exc:
            log.warning("similar papers: the %s list failed: %s", source.name, exc)
            return []
        for item in items:
            if isinstance(item, ExplainedId) and item.reasons:
                reasons.setdefault(item.paper_id, item.reasons)
        return items

    def _paper_vector(self, index: VectorIndex | None, paper: Paper) -> Vectors | None:
        """The paper's stored vector, or its text embedded now (a paper not indexed yet)."""
        if index is None:
            return None
        try:
            vector = index.vector(paper.id)
        except VectorIndexError as exc:
            log.warning("similar papers: vector lookup failed: %s", exc)
            return None
        if vector is None:
            vector = self._embed(embedding_text(paper.title, paper.abstract), [])
        return vector

    def _similar_dense(
        self,
        index: VectorIndex | None,
        vector: Vectors | None,
        paper: Paper,
        pool: int,
        filters: SearchFilters | None,
    ) -> list[ScoredId]:
        if index is None or vector is None:
            return []
        try:
            return index.search(vector, pool, filters, exclude=[paper.id])
        except VectorIndexError as exc:
            log.warning("similar papers without embeddings: %s", exc)
            return []

    def _by_neighbourhood(
        self, index: VectorIndex, vector: Vectors, dense: list[ScoredId]
    ) -> tuple[list[ScoredId], dict[str, Vectors]]:
        """The dense candidates re-ranked by their neighbourhoods among themselves and the paper
        (:mod:`paperfeed.domain.neighbourhood`), with the vectors read; the plain list when they cannot
        be read."""
        if len(dense) < 2:
            return dense, {}
        try:
            found = index.vectors([x.paper_id for x in dense])
            centre = index.centroid()
        except VectorIndexError as exc:
            log.warning("similar papers without neighbourhoods: %s", exc)
            return dense, {}
        s = self.similar_settings
        ranked = rerank_by_neighbourhood(
            vector,
            dense,
            found,
            centre=centre,
            k=s.neighbourhood,
            power=s.neighbourhood_power,
            blend=s.neighbourhood_blend,
        )
        return ranked, found

    def similar_keyword(
        self, paper: Paper, pool: int, filters: SearchFilters | None = None
    ) -> list[ScoredId]:
        """The keyword more-like-this list of ``paper``'s own title and abstract, best first (without the
        paper itself); empty when the keyword index is unavailable."""
        found = self._similar_keyword(paper, pool + 1, filters, 1.0)
        # ties in the engine's order are not stable between searches (tantivy's more-like-this): by id
        found = sorted(found, key=lambda x: (-x.score, x.paper_id))
        return [x for x in found if x.paper_id != paper.id][:pool]

    def _similar_keyword(
        self, paper: Paper, pool: int, filters: SearchFilters | None, weight: float
    ) -> list[ScoredId]:
        s = self.similar_settings
        if weight <= 0:
            return []  # switched off: spare the query
        try:
            return self.keyword.more_like_this(
                paper.title, paper.abstract, pool + 1, filters, max_terms=s.keyword_terms
            )
        except KeywordIndexUnavailable as exc:
            log.warning("similar papers without the keyword list: %s", exc)
            return []

    @staticmethod
    def _cosines(
        index: VectorIndex | None, vector: Vectors | None, ids: list[str], read: Mapping[str, Vectors]
    ) -> dict[str, float]:
        """The paper's cosine with each of ``ids``; vectors already ``read`` are not asked again."""
        if index is None or vector is None or not ids:
            return {}
        stored = {pid: read[pid] for pid in ids if pid in read}
        missing = [pid for pid in ids if pid not in read]
        try:
            stored.update(index.vectors(missing) if missing else {})
        except VectorIndexError:
            return {}
        import numpy as np  # here, not at the top: a keyword-only search never loads NumPy

        return {pid: float(np.dot(vector, v)) for pid, v in stored.items()}

    # -- internals ------------------------------------------------------------------------------------

    def _with_topic(self, parsed: ParsedQuery, notes: list[str]) -> ParsedQuery:
        """``parsed`` with its topic turned into an allow-list of the topic's papers (see the module doc)."""
        topic = parsed.filters.topic
        if topic is None:
            return parsed
        members = self.topics.members(topic) if self.topics is not None else None
        if members is None:
            notes.append(f"there is no topic {topic}; nothing matches topic:{topic}")
            members = frozenset()
        known = parsed.filters.paper_ids
        allowed = members if known is None else members & known
        return replace(parsed, filters=replace(parsed.filters, paper_ids=allowed))

    def _dense_alone(self, parsed: ParsedQuery, pool: int) -> tuple[list[ScoredId] | None, list[str]]:
        """The dense list of a query without hard constraints, with its notes (runs on the executor)."""
        notes: list[str] = []
        return self._dense(parsed, pool, [], notes), notes

    def _dense(
        self, parsed: ParsedQuery, pool: int, keyword: list[ScoredId], notes: list[str]
    ) -> list[ScoredId] | None:
        text = parsed.text
        if not text:
            return None
        index = self._vector_index(notes)
        if index is None:
            return None
        vector = self._embed(text, notes)
        if vector is None:
            return None
        floor = self.settings.min_dense_score
        if parsed.constrained:
            return self._rerank(index, vector, keyword, floor)
        try:
            found = index.search(vector, pool, parsed.filters)
        except VectorIndexError as exc:
            log.warning("vector search failed, using keyword results only: %s", exc)
            notes.append("semantic search is unavailable right now; showing keyword matches")
            return None
        return [s for s in found if s.score >= floor]

    @staticmethod
    def _rerank(index: VectorIndex, vector: Vectors, pool: list[ScoredId], floor: float) -> list[ScoredId]:
        import numpy as np

        stored = index.vectors([item.paper_id for item in pool])  # one lookup, not one per candidate
        scored = []
        for item in pool:
            other = stored.get(item.paper_id)
            if other is not None:
                score = float(np.dot(vector, other))
                if score >= floor:
                    scored.append(ScoredId(item.paper_id, score))
        scored.sort(key=lambda s: -s.score)
        return scored

    def _vector_index(self, notes: list[str]) -> VectorIndex | None:
        """The vector index, kept current by ``vectors`` (a saved newer generation is picked up there)."""
        try:
            index = self.vectors.current()
        except VectorIndexError as exc:
            log.warning("vector index unavailable: %s", exc)
            notes.append("semantic search is unavailable (run `paperfeed index`); showing keyword matches")
            return None
        if index is None or len(index) == 0:
            return None
        return index

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="query-embed")
            return self._pool

    def _start_embedding(self, text: str) -> None:
        """Begin embedding ``text`` in the background; :meth:`_embed` picks the result up."""
        with self._lock:
            if text in self._query_cache or text in self._pending:
                return
        future = self._executor().submit(self._compute, text)
        with self._lock:
            self._pending.setdefault(text, future)

    def _compute(self, text: str) -> _Embedded:
        try:
            if self.embedder is None:
                return _Embedded(None, None, None)
            if self.embedder.loading():  # the web process is loading the model: do not wait for it
                return _Embedded(None, None, MODEL_LOADING_NOTE)
            embedder = self.embedder.current()
            import numpy as np

            vector = np.asarray(embedder.embed([text])[0], dtype=np.float32)
            return _Embedded(vector, embedder.model_id, None)
        except Exception as exc:  # a model that cannot load must not take keyword search down with it
            log.warning("embedding the query failed: %s", exc)
            return _Embedded(
                None,
                None,
                "semantic search is unavailable (the embedding model failed); showing keyword matches",
            )

    def query_vector(self, text: str, notes: list[str]) -> Vectors | None:
        """The query's vector with the embedder in use (cached: a search of the same text just made it);
        None, with a note, when the model cannot embed."""
        return self._embed(text, notes) if text else None

    def _embed(self, text: str, notes: list[str]) -> Vectors | None:
        with self._lock:
            cached = self._query_cache.get(text)
            future = self._pending.pop(text, None)
        if cached is not None and future is None:
            embedder = self.embedder.current() if self.embedder is not None else None
            if embedder is not None and embedder.model_id == cached[0]:
                with self._lock:
                    if text in self._query_cache:
                        self._query_cache.move_to_end(text)
                return cached[1]
        found = future.result() if future is not None else self._compute(text)
        if found.error:
            notes.append(found.error)
        if found.vector is None or found.model_id is None:
            return None
        with self._lock:
            self._query_cache[text] = (found.model_id, found.vector)
            self._query_cache.move_to_end(text)
            if len(self._query_cache) > 1024:
                self._query_cache.popitem(last=False)
        return found.vector

    def close(self) -> None:
        """Stop the query-embedding threads (the composition root calls this on shutdown)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
