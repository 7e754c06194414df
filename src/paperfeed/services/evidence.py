"""Evidence search (issue #42): the stored sentences that bear on a question, each in its paper.

How a query is answered (docs/search.md, "Evidence"):

1. the query is parsed as a search query is (words, "phrases", ``-words``, ``author:``, the filters);
2. **the paper prior**: the hybrid paper search ranks papers for the whole query (its best
   ``paper_depth``); every sentence of those papers becomes a candidate;
3. **words**: BM25 over the sentences (the sentence keyword index), its best ``keyword_depth``, filters
   and roles applied in the engine;
4. **meaning**: the query's vector against the stored sentence vectors (the sentence vector index), its
   best ``dense_depth``, filters and roles applied before ranking; every candidate's cosine is read from
   the same index, so the dense rank orders all of them;
5. the three are fused (:func:`~paperfeed.domain.evidence.fuse_sentences`), hidden papers dropped, and the
   best sentences read from the store (current rows only, so a sentence of an abstract that changed since
   it was cut never shows), with the sentence before and after, and grouped under their papers.

A phrase or ``-word`` applies to the sentence: the keyword list is then the pool and meaning re-ranks it.
``author:`` applies to the paper: the paper search's matches are the only papers whose sentences rank.
When the vector index or the model is unavailable, words and the prior answer and a note says so; when
the keyword index is, meaning and the prior do.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from paperfeed.domain.evidence import (
    MAX_EVIDENCE_LIMIT,
    EvidenceHit,
    EvidencePage,
    EvidenceRow,
    EvidenceRows,
    EvidenceWeights,
    Fused,
    ScoredSentence,
    SentenceKeywordIndex,
    SentenceVectorIndex,
    candidate_keys,
    fuse_sentences,
    group_hits,
    split_key,
)
from paperfeed.domain.query import parse_query, with_filters
from paperfeed.domain.search import (
    KeywordIndexUnavailable,
    ParsedQuery,
    SearchFilters,
    TopicMembers,
    VectorIndexError,
)
from paperfeed.domain.sentences import ROLES, Role
from paperfeed.services.search import HybridSearch
from paperfeed.services.visible import VisiblePapers

if TYPE_CHECKING:
    from paperfeed.domain.search import Vectors

__all__ = ["EvidenceLegs", "EvidenceSearch", "SentenceVectorSource"]

log = logging.getLogger(__name__)

_POOL_CONSTRAINED = 500  # keyword candidates when a phrase or -word makes the keyword list the pool
_AUTHOR_PAPERS = 500  # papers of the paper search an author: query's sentences may come from


class SentenceVectorSource(Protocol):
    """The sentence vector index as this process reads it (None: nothing saved yet; raises
    :class:`~paperfeed.domain.search.VectorIndexError` when it is unusable or of another model)."""

    def current(self) -> SentenceVectorIndex | None: ...


@dataclass
class EvidenceLegs:
    """What one query's lists found, before fusion: sentence keys best first, the paper search's ids best
    first, the top papers' sentences (rows, and their positions of the roles asked for), and the vector
    index and query vector every candidate's cosine is read from (None: no meaning leg)."""

    parsed: ParsedQuery
    keyword: list[str]
    dense: list[str]
    papers: list[str]
    positions: dict[str, list[int]]
    rows: dict[str, EvidenceRow]
    index: SentenceVectorIndex | None
    vector: Vectors | None
    _cache: dict[str, float] = field(default_factory=dict)

    def cosines(self, keys: list[str]) -> dict[str, float]:
        """Each of ``keys``' cosine with the query (those the index holds), read once and kept."""
        if self.index is None or self.vector is None:
            return {}
        missing = [k for k in keys if k not in self._cache]
        if missing:
            import numpy as np

            try:
                found = self.index.vectors(missing)
            except VectorIndexError:
                found = {}
            if found:
                names = list(found)
                matrix = np.stack([found[k] for k in names]).astype(np.float32, copy=False)
                scores = matrix @ np.asarray(self.vector, dtype=np.float32)
                self._cache.update(zip(names, (float(x) for x in scores), strict=True))
            for key in missing:
                self._cache.setdefault(key, float("nan"))
        return {k: v for k in keys if (v := self._cache[k]) == v}  # NaN: not in the index


@dataclass
class EvidenceSearch:
    """Sentences for a question: words, meaning and the paper's relevance, fused (see the module)."""

    papers: VisiblePapers
    paper_search: HybridSearch
    keyword: SentenceKeywordIndex
    vectors: SentenceVectorSource
    rows: EvidenceRows
    weights: EvidenceWeights
    topics: TopicMembers | None = None
    _pool: ThreadPoolExecutor | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def search(
        self,
        query: str,
        filters: SearchFilters | None = None,
        roles: frozenset[Role] | None = None,
        limit: int = 20,
    ) -> EvidencePage:
        """The best ``limit`` sentences (at most :data:`MAX_EVIDENCE_LIMIT`), grouped under their papers."""
        limit = max(0, min(limit, MAX_EVIDENCE_LIMIT))
        parsed = with_filters(parse_query(query), filters)
        if parsed.empty or limit == 0:
            return EvidencePage(query, (), roles, (), 0, limit)
        notes: list[str] = []
        legs = self.legs(parsed, roles, self.weights, notes)
        fused = self.rank(legs, self.weights)
        hidden = self.papers.hidden()
        fused = [f for f in fused if split_key(f.key)[0] not in hidden]
        hits: list[EvidenceHit] = []
        at = 0
        while len(hits) < limit and at < len(fused):  # read in windows: stale sentences are skipped
            window = fused[at : at + limit + 10]
            at += len(window)
            wanted = [p for p in dict.fromkeys(split_key(f.key)[0] for f in window) if p not in legs.rows]
            rows = {**legs.rows, **{r.paper_id: r for r in self.rows.rows(wanted, vectors=False)}}
            for f in window:
                paper_id, position = split_key(f.key)
                row = rows.get(paper_id)
                if row is None or position >= len(row.sentences):
                    continue  # a paper deleted, or whose abstract changed since (its sentences are redone)
                if roles is not None and row.sentences[position].role not in roles:
                    continue
                hits.append(self._hit(legs.parsed, row, position, len(hits) + 1, f))
                if len(hits) == limit:
                    break
        papers = self.papers.get(list(dict.fromkeys(h.paper_id for h in hits)))
        hits = [h for h in hits if h.paper_id in papers]
        return EvidencePage(query, group_hits(hits, papers), roles, tuple(notes), len(fused), limit)

    def legs(
        self, parsed: ParsedQuery, roles: frozenset[Role] | None, depths: EvidenceWeights, notes: list[str]
    ) -> EvidenceLegs:
        """The three lists for ``parsed`` at ``depths`` (a bench asks once for more than it ranks)."""
        parsed = self._with_topic(parsed, notes)
        on_sentence = bool(parsed.phrases or parsed.excluded)  # the keyword list is the pool
        keyword_leg = self._executor().submit(
            self._keyword, parsed, _POOL_CONSTRAINED if on_sentence else depths.keyword_depth, roles
        )
        # The paper prior: the hybrid ranking of the whole query (it embeds the query, which the meaning
        # leg then reads from its cache), without the phrases and -words, which are the sentence's here.
        paper_query = replace(parsed, phrases=(), excluded=()) if on_sentence else parsed
        papers = self.paper_search.ranking(paper_query, notes)
        keyword, keyword_note = keyword_leg.result()
        if keyword_note:
            notes.append(keyword_note)
        allowed = frozenset(papers) if parsed.authors else None  # author: the paper search's matches only
        if allowed is not None:
            keyword = [k for k in keyword if k.paper_id in allowed]
        index = self._vector_index(notes)
        vector = None
        if index is not None and parsed.text:
            vector = self.paper_search.query_vector(parsed.text, notes)
        dense: list[ScoredSentence] = []
        if vector is not None and index is not None and not on_sentence:
            sentence_filters = parsed.filters
            if allowed is not None:
                sentence_filters = replace(sentence_filters, paper_ids=allowed)
            dense = self._dense(index, vector, depths.dense_depth, sentence_filters, roles, notes)
        prior = [] if on_sentence else papers[: depths.paper_depth]
        rows = {r.paper_id: r for r in self.rows.rows(prior, vectors=False)} if prior else {}
        positions = {pid: _positions(row, roles) for pid, row in rows.items()}
        return EvidenceLegs(
            parsed,
            [k.key for k in keyword],
            [d.key for d in dense],
            [] if on_sentence else papers,
            positions,
            rows,
            index if vector is not None else None,
            vector,
        )

    def rank(self, legs: EvidenceLegs, weights: EvidenceWeights) -> list[Fused]:
        """The candidates of ``legs`` fused by ``weights`` (best first), hidden papers still among them."""
        keys = candidate_keys(legs.keyword, legs.dense, legs.papers, legs.positions, weights)
        cosines = legs.cosines(keys)
        paper_ranks = {pid: rank for rank, pid in enumerate(legs.papers, start=1)}
        return fuse_sentences(legs.keyword[: weights.keyword_depth], cosines, paper_ranks, weights)

    # -- the legs ------------------------------------------------------------------------------------

    def _keyword(
        self, parsed: ParsedQuery, depth: int, roles: frozenset[Role] | None
    ) -> tuple[list[ScoredSentence], str | None]:
        try:
            return self.keyword.search(parsed, depth, roles), None
        except KeywordIndexUnavailable as exc:
            log.warning("evidence: the sentence keyword index failed: %s", exc)
            return [], "the sentence keyword index is unavailable right now; ranking by meaning only"

    def _vector_index(self, notes: list[str]) -> SentenceVectorIndex | None:
        try:
            index = self.vectors.current()
        except VectorIndexError as exc:
            log.warning("evidence: sentence vectors unavailable: %s", exc)
            notes.append("ranking by meaning is unavailable (run `paperfeed index`); ranking by words only")
            return None
        if index is None or len(index) == 0:
            notes.append("no sentence vectors yet (`paperfeed index` makes them); ranking by words only")
            return None
        return index

    @staticmethod
    def _dense(
        index: SentenceVectorIndex,
        vector: Vectors,
        depth: int,
        filters: SearchFilters,
        roles: frozenset[Role] | None,
        notes: list[str],
    ) -> list[ScoredSentence]:
        try:
            return index.search(vector, depth, filters, roles)
        except VectorIndexError as exc:
            log.warning("evidence: sentence vector search failed: %s", exc)
            notes.append("ranking by meaning is unavailable right now; ranking by words only")
            return []

    def _hit(self, parsed: ParsedQuery, row: EvidenceRow, position: int, rank: int, f: Fused) -> EvidenceHit:
        sentence = row.sentences[position]
        text = sentence.text(row.abstract)
        before = row.text(position - 1) if position > 0 else None
        after = row.text(position + 1) if position + 1 < len(row.sentences) else None
        try:
            spans = tuple(self.keyword.highlight(parsed, text))
        except KeywordIndexUnavailable:
            spans = ()
        return EvidenceHit(
            paper_id=row.paper_id,
            position=position,
            rank=rank,
            score=f.score,
            text=text,
            role=sentence.role,
            role_probability=sentence.probabilities[ROLES.index(sentence.role)],
            before=before,
            after=after,
            spans=spans,
            start=sentence.start,
            end=sentence.end,
            keyword_rank=f.keyword_rank,
            dense_rank=f.dense_rank,
            paper_rank=f.paper_rank,
            cosine=f.cosine,
        )

    def _with_topic(self, parsed: ParsedQuery, notes: list[str]) -> ParsedQuery:
        topic = parsed.filters.topic
        if topic is None:
            return parsed
        members = self.topics.members(topic) if self.topics is not None else None
        if members is None:
            notes.append(f"there is no topic {topic}; nothing matches topic:{topic}")
            members = frozenset()
        known = parsed.filters.paper_ids
        allowed = members if known is None else members & known
        return replace(parsed, filters=replace(parsed.filters, paper_ids=allowed, topic=None))

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evidence-keyword")
            return self._pool

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def _positions(row: EvidenceRow, roles: frozenset[Role] | None) -> list[int]:
    return [i for i, s in enumerate(row.sentences) if roles is None or s.role in roles]
