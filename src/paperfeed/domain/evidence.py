"""Evidence search: the papers' own sentences that bear on a question, each in its paper (issue #42).

A researcher often comes with a question or a claim ("layer normalization helps small batches"), not a
topic. Every abstract is already split into sentences, each embedded and given its role by the indexer's
sentence pass (:mod:`paperfeed.domain.sentences`). Evidence search ranks those sentences themselves:

* a **keyword list**: BM25 over the sentences (a keyword index of sentences beside the papers' one);
* a **meaning list**: the cosine of the query's vector with the stored sentence vectors;
* the **paper's own relevance** to the query (the hybrid paper search's rank) as a prior, so a sentence of
  a paper that matches the question as a whole outranks a lone phrase match elsewhere.

They are fused by weighted reciprocal rank fusion (:func:`fuse_sentences`; the weights are settings,
chosen on SciFact's train claims by ``bench/evidence_quality.py``). What comes back is quoted verbatim:
extracted sentences, never generated, and no verdict on the claim (whether a sentence supports or
contradicts it needs a model paperfeed does not have offline, so it is not guessed).

Everything here is pure; the indexes and the rows they are built from are ports.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import TYPE_CHECKING, Protocol

from .models import Paper
from .search import ParsedQuery, SearchFilters, Span
from .sentences import ROLES, Role, Sentence, sentence_model_id

if TYPE_CHECKING:
    from .search import Vectors

__all__ = [
    "EVIDENCE_NOTICE",
    "MAX_EVIDENCE_LIMIT",
    "EvidenceGroup",
    "EvidenceHit",
    "EvidencePage",
    "EvidenceRow",
    "EvidenceRows",
    "EvidenceWeights",
    "Fused",
    "IndexCheck",
    "ScoredSentence",
    "SentenceKeywordIndex",
    "SentenceVectorIndex",
    "candidate_keys",
    "fuse_sentences",
    "group_hits",
    "looks_like_question",
    "parse_roles",
    "sentence_key",
    "sentence_space",
    "split_key",
]

MAX_EVIDENCE_LIMIT = 100  # sentences a request may ask for (bounded work per request)
EVIDENCE_NOTICE = (
    "Sentences quoted verbatim from the papers' abstracts, ranked by how closely they match the question "
    "in words and meaning. They are extracted, not generated, and not a verdict: whether a sentence "
    "supports or contradicts the claim is for you to judge."
)

# The roles a reader may ask for by name, and what the page's switch calls them ("results only").
ROLE_ALIASES: Mapping[str, Role] = {
    "background": "background",
    "objective": "objective",
    "objectives": "objective",
    "method": "method",
    "methods": "method",
    "result": "result",
    "results": "result",
    "other": "other",
}


def parse_roles(value: str | Iterable[str] | None) -> frozenset[Role] | None:
    """Roles from a comma-separated string or a list ("results", "method,result"); None (every role) for
    nothing given; a ValueError naming the choices for anything else."""
    if value is None:
        return None
    parts = value.split(",") if isinstance(value, str) else [p for v in value for p in v.split(",")]
    found: set[Role] = set()
    for part in parts:
        word = part.strip().lower()
        if not word:
            continue
        role = ROLE_ALIASES.get(word)
        if role is None:
            raise ValueError(f"unknown role {part.strip()[:40]!r}: choose among {', '.join(ROLES)}")
        found.add(role)
    if not found or len(found) == len(ROLES):
        return None
    return frozenset(found)


# Words a question starts with, and a question mark: the search page offers the Evidence view for them.
_QUESTION = re.compile(
    r"^(does|do|did|is|are|was|were|can|could|should|will|would|has|have|how|why|what|which|when|whether)\b",
    re.IGNORECASE,
)


def looks_like_question(query: str) -> bool:
    """Whether ``query`` reads as a question or a claim rather than a topic: a question mark, a question
    word first, or a statement of six or more words with a verb-like word ("... improves ...")."""
    text = query.strip()
    if not text:
        return False
    if text.endswith("?") or _QUESTION.match(text):
        return True
    words = text.split()
    return len(words) >= 6 and any(
        w.lower().endswith(("s", "ed")) and len(w) > 3 and w.isalpha() for w in words[1:]
    )


def sentence_space(model_id: str) -> str:
    """The model id the stored sentence vectors of embedding model ``model_id`` carry (pooled from the
    paper's own forward pass, :func:`~paperfeed.domain.sentences.sentence_model_id`): the sentence vector
    index is of that space, and a query embedded by ``model_id`` is compared with it."""
    return sentence_model_id(model_id)


def sentence_key(paper_id: str, position: int) -> str:
    """One stored sentence's id in the sentence indexes: ``<paper id>#<position>``."""
    return f"{paper_id}#{position}"


def split_key(key: str) -> tuple[str, int]:
    """``(paper id, position)`` of a :func:`sentence_key` (a paper id may itself hold ``#``)."""
    paper_id, _, position = key.rpartition("#")
    return paper_id, int(position)


@dataclass(frozen=True, slots=True)
class ScoredSentence:
    """A sentence of a paper (its position among the paper's stored sentences) and a list's score."""

    paper_id: str
    position: int
    score: float

    @property
    def key(self) -> str:
        return sentence_key(self.paper_id, self.position)


@dataclass(frozen=True, slots=True)
class EvidenceRow:
    """What the sentence indexes need of one paper: its current sentences (for the text of
    ``content_hash``, of embedding model ``model_id``), its text and the facets filters use; ``stamp``
    is when the sentences were stored (the indexes follow the store by it)."""

    paper_id: str
    content_hash: str
    model_id: str
    stamp: datetime
    abstract: str
    authors: tuple[str, ...]
    categories: tuple[str, ...]
    published: date | None
    has_code: bool
    sentences: tuple[Sentence, ...]
    vectors: Vectors | None = None

    def text(self, position: int) -> str:
        return self.sentences[position].text(self.abstract)


class EvidenceRows(Protocol):
    """The papers' stored sentences as the sentence indexes read them (``paper_sentences`` joined with
    ``papers``). An index follows every stored row in the order rows were stored (a row made stale by a
    changed abstract stays indexed until the sentence pass redoes it: search drops it by reading
    :meth:`rows`, which gives current rows only)."""

    def changed(
        self, since: tuple[datetime, str] | None, *, limit: int, vectors: bool, model_id: str | None = None
    ) -> list[EvidenceRow]:
        """Rows stored after ``since`` (a ``(stamp, paper id)`` cursor; None: from the first), current or
        not, in ``(stamp, paper id)`` order, ``limit`` of them; ``model_id``: only rows of that model."""
        ...

    def rows(
        self, paper_ids: Sequence[str], *, vectors: bool, model_id: str | None = None
    ) -> list[EvidenceRow]:
        """The current rows of those of ``paper_ids`` that have some."""
        ...

    def counts(self, model_id: str | None = None, *, current: bool = True) -> tuple[int, int]:
        """(papers, sentences) of the rows (of ``model_id``; ``current``: only those of the paper's
        present text)."""
        ...

    def newest(self) -> tuple[datetime, str] | None:
        """The ``(stamp, paper id)`` of the last row stored (None: none), any row, current or not."""
        ...


@dataclass(frozen=True, slots=True)
class IndexCheck:
    """How a sentence index stands against the store: sentences the store holds (current rows), the
    index holds, and whether it follows the store up to its newest row."""

    name: str
    stored: int
    indexed: int
    behind: bool  # rows stored after the index's watermark (a catch-up is due)
    detail: str = ""

    @property
    def consistent(self) -> bool:
        return not self.behind and self.stored == self.indexed


class SentenceKeywordIndex(Protocol):
    """BM25 over the papers' sentences (tantivy on SQLite, PostgreSQL full-text search on PostgreSQL),
    kept in step with the stored sentences by :meth:`on_saved` and :meth:`catch_up`."""

    @property
    def name(self) -> str: ...

    def search(
        self, query: ParsedQuery, k: int, roles: frozenset[Role] | None = None
    ) -> list[ScoredSentence]:
        """Best ``k`` sentences for the query's words (phrases and ``-words`` on the sentence; ``author:``
        and the filters on its paper), of ``roles`` only (None: any), best first."""
        ...

    def highlight(self, query: ParsedQuery, text: str) -> list[Span]: ...

    def on_saved(self, paper_ids: Sequence[str]) -> None:
        """The sentences of these papers were just stored (the indexer's sentence pass): index them."""
        ...

    def catch_up(self) -> int:
        """Index what was stored since the index last followed the store; returns papers indexed."""
        ...

    def rebuild(self) -> int:
        """Index every stored sentence from scratch; returns papers indexed."""
        ...

    def check(self) -> IndexCheck: ...

    def close(self) -> None: ...


class SentenceVectorIndex(Protocol):
    """Nearest sentences by cosine over the stored sentence vectors (exact, or HNSW once large), loaded
    once and reloaded when a newer generation was saved, filter- and role-aware before ranking."""

    @property
    def model_id(self) -> str: ...

    def search(
        self,
        vector: Vectors,
        k: int,
        filters: SearchFilters | None = None,
        roles: frozenset[Role] | None = None,
    ) -> list[ScoredSentence]: ...

    def vectors(self, keys: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors of those sentences (by :func:`sentence_key`) the index holds."""
        ...

    def __len__(self) -> int: ...

    def reload_if_changed(self) -> bool:
        """Pick up a generation another process saved (cheap when nothing changed); True if reloaded."""
        ...


@dataclass(frozen=True, slots=True)
class EvidenceWeights:
    """How the three lists are fused (``PAPERFEED_EVIDENCE_*``; the one default of each is in the
    settings, chosen on SciFact's train claims)."""

    rrf_k: float  # damping of the sentence lists' ranks
    keyword: float  # weight of the BM25 list of sentences
    dense: float  # weight of the cosine ranking of the candidates
    paper: float  # weight of the paper's rank in the hybrid paper search (the prior)
    paper_k: float  # damping of the paper's rank
    keyword_depth: int  # sentences from the keyword index
    dense_depth: int  # sentences from the vector index
    paper_depth: int  # papers of the paper search whose sentences all become candidates
    per_paper: int  # sentences a paper may contribute to the top ranks before the others (0: no cap)
    min_cosine: float  # the meaning floor: no sentence at all when even the closest is below it


@dataclass(frozen=True, slots=True)
class Fused:
    """A candidate sentence's fused score and the ranks behind it (None: not in that list)."""

    key: str
    score: float
    keyword_rank: int | None
    dense_rank: int | None
    paper_rank: int | None
    cosine: float | None


def candidate_keys(
    keyword: Sequence[str],
    dense: Sequence[str],
    papers: Sequence[str],
    positions: Mapping[str, Sequence[int]],
    weights: EvidenceWeights,
) -> list[str]:
    """The sentences that are ranked: the best ``keyword_depth`` of the BM25 list, the best
    ``dense_depth`` by cosine, and every sentence (``positions``, of the roles asked for) of the best
    ``paper_depth`` papers of the paper search; each once, in that order."""
    keys = [*keyword[: weights.keyword_depth], *dense[: weights.dense_depth]]
    for paper_id in papers[: weights.paper_depth]:
        keys.extend(sentence_key(paper_id, i) for i in positions.get(paper_id, ()))
    return list(dict.fromkeys(keys))


def fuse_sentences(
    keyword: Sequence[str],
    cosines: Mapping[str, float],
    paper_ranks: Mapping[str, int],
    weights: EvidenceWeights,
) -> list[Fused]:
    """Candidate sentences (keys) best first: ``w_kw / (k + keyword rank) + w_dense / (k + dense rank) +
    w_paper / (k_paper + the paper's rank)``, each term only where there is that rank.

    ``keyword``: the BM25 list, best first; ``cosines``: every candidate's cosine with the query (the dense
    rank is its place by cosine among the candidates); ``paper_ranks``: 1-based ranks of papers in the
    paper search. A paper's sentences share its prior, so among them words and meaning decide, while a
    sentence of a paper that answers the whole question rises above a lone match in an unrelated one.
    ``per_paper`` keeps one paper from filling the top: a paper's sentences past that many are ranked
    after every other paper's first ones. ``min_cosine`` is the meaning floor: when no candidate comes
    that close to the query, nothing bears on it and no sentence is returned (rather than the nearest
    ones, however far); when one does, every candidate ranks as usual. Without cosines (no meaning leg)
    there is no floor."""
    if cosines and max(cosines.values()) < weights.min_cosine:
        return []
    kw_rank = {key: i for i, key in enumerate(dict.fromkeys(keyword), start=1)}
    by_cosine = sorted(cosines.items(), key=lambda kv: (-kv[1], kv[0]))
    dense_rank = {key: i for i, (key, _) in enumerate(by_cosine, start=1)}
    fused: list[Fused] = []
    k, w = weights.rrf_k, weights
    for key in dict.fromkeys([*kw_rank, *dense_rank]):
        paper_id, _ = split_key(key)
        kr, dr, pr = kw_rank.get(key), dense_rank.get(key), paper_ranks.get(paper_id)
        score = 0.0
        if kr is not None:
            score += w.keyword / (k + kr)
        if dr is not None:
            score += w.dense / (k + dr)
        if pr is not None:
            score += w.paper / (w.paper_k + pr)
        fused.append(Fused(key, score, kr, dr, pr, cosines.get(key)))
    fused.sort(key=lambda f: (-f.score, f.key))
    if weights.per_paper > 0:
        seen: dict[str, int] = {}
        first: list[Fused] = []
        later: list[Fused] = []
        for f in fused:
            paper_id, _ = split_key(f.key)
            seen[paper_id] = seen.get(paper_id, 0) + 1
            (first if seen[paper_id] <= weights.per_paper else later).append(f)
        fused = first + later
    return fused


@dataclass(frozen=True, slots=True)
class EvidenceHit:
    """One sentence quoted verbatim, with its neighbours, its role and where it matched the query."""

    paper_id: str
    position: int  # among the paper's stored sentences, 0-based
    rank: int  # 1-based, over all sentences of the answer
    score: float
    text: str
    role: Role
    role_probability: float
    before: str | None  # the sentence before it in the abstract, None for the first
    after: str | None
    spans: tuple[Span, ...]  # the query's words in ``text``
    start: int  # the sentence's characters in the abstract
    end: int
    keyword_rank: int | None = None
    dense_rank: int | None = None
    paper_rank: int | None = None
    cosine: float | None = None


@dataclass(frozen=True, slots=True)
class EvidenceGroup:
    """A paper and its sentences in the answer, in their rank order (the paper ranks by its best one)."""

    paper: Paper
    hits: tuple[EvidenceHit, ...]


@dataclass(frozen=True, slots=True)
class EvidencePage:
    query: str
    groups: tuple[EvidenceGroup, ...]
    roles: frozenset[Role] | None = None
    notes: tuple[str, ...] = ()
    total: int = 0  # candidate sentences that were ranked
    limit: int = 0
    muted: int = 0  # sentences of papers the reader's mute rules left out
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def hits(self) -> list[EvidenceHit]:
        """Every sentence, best first (across papers)."""
        return sorted((h for g in self.groups for h in g.hits), key=lambda h: h.rank)


def group_hits(hits: Sequence[EvidenceHit], papers: Mapping[str, Paper]) -> tuple[EvidenceGroup, ...]:
    """Hits grouped under their papers, papers in the order of their best hit, hits by rank."""
    order: dict[str, list[EvidenceHit]] = {}
    for hit in sorted(hits, key=lambda h: h.rank):
        if hit.paper_id in papers:
            order.setdefault(hit.paper_id, []).append(hit)
    return tuple(EvidenceGroup(papers[pid], tuple(found)) for pid, found in order.items())
