"""Searching one reader's own library: their saved papers, tag names and private notes, in plain words and
by meaning — hybrid like the main search, on a corpus small enough to score in memory.

Words: each query term (case- and accent-insensitive, a term of four letters or more also matching words
it begins, so "gait" finds "gaits") scores the papers whose note, tags, title, authors or abstract hold it,
weighted by field (a note or a tag says more about why the reader kept a paper than its abstract) and by
how rare the term is in the library. Meaning: the cosine of the query's embedding to the paper's stored
vector and to its note's. The two best-first lists are fused by reciprocal rank, as the main search does.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .fusion import reciprocal_rank_fusion
from .models import Paper
from .search import ScoredId

__all__ = [
    "FIELD_WEIGHTS",
    "MAX_LIBRARY_QUERY_CHARS",
    "LibraryDoc",
    "dense_scores",
    "fuse",
    "keyword_scores",
    "terms",
]

MAX_LIBRARY_QUERY_CHARS = 250
FIELD_WEIGHTS = {"note": 3.0, "tags": 3.0, "title": 2.0, "authors": 2.0, "abstract": 1.0}
_WORD = re.compile(r"\w+")
Vectors = npt.NDArray[np.float32]


def _fold(text: str) -> str:
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def terms(text: str) -> list[str]:
    """The words of ``text``, folded."""
    return _WORD.findall(_fold(text))


@dataclass(frozen=True, slots=True)
class LibraryDoc:
    """One paper of the library as search sees it."""

    paper: Paper
    tags: tuple[str, ...]
    note: str

    def fields(self) -> dict[str, set[str]]:
        return {
            "note": set(terms(self.note)),
            "tags": set(terms(" ".join(self.tags))),
            "title": set(terms(self.paper.title)),
            "authors": set(terms(" ".join(self.paper.authors))),
            "abstract": set(terms(self.paper.abstract)),
        }


def _matches(term: str, words: set[str]) -> bool:
    if term in words:
        return True
    return len(term) >= 4 and any(w.startswith(term) for w in words)


def keyword_scores(query: str, docs: Sequence[LibraryDoc]) -> tuple[list[ScoredId], dict[str, set[str]]]:
    """Best-first keyword matches, and for each matched paper the fields that matched (to say why)."""
    wanted = list(dict.fromkeys(terms(query)))
    if not wanted or not docs:
        return [], {}
    fields = [d.fields() for d in docs]
    n = len(docs)
    scores: dict[str, float] = {}
    why: dict[str, set[str]] = {}
    for term in wanted:
        holders = [i for i, f in enumerate(fields) if any(_matches(term, words) for words in f.values())]
        if not holders:
            continue
        idf = math.log(1 + (n - len(holders) + 0.5) / (len(holders) + 0.5))
        for i in holders:
            pid = docs[i].paper.id
            for name, words in fields[i].items():
                if _matches(term, words):
                    scores[pid] = scores.get(pid, 0.0) + idf * FIELD_WEIGHTS[name]
                    why.setdefault(pid, set()).add(name)
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    return [ScoredId(pid, score) for pid, score in ranked], why


def dense_scores(
    query: Vectors, papers: Mapping[str, Vectors], notes: Mapping[str, Vectors], *, min_score: float = 0.2
) -> list[ScoredId]:
    """Best-first cosine of ``query`` to each paper's vector or its note's, whichever is closer."""
    q = np.asarray(query, dtype=np.float32)
    q = q / (float(np.linalg.norm(q)) or 1.0)
    best: dict[str, float] = {}
    for source in (papers, notes):
        for pid, vector in source.items():
            v = np.asarray(vector, dtype=np.float32)
            score = float(q @ v) / (float(np.linalg.norm(v)) or 1.0)
            best[pid] = max(best.get(pid, -1.0), score)
    ranked = sorted(((pid, s) for pid, s in best.items() if s >= min_score), key=lambda kv: (-kv[1], kv[0]))
    return [ScoredId(pid, score) for pid, score in ranked]


def fuse(keyword: Sequence[ScoredId], dense: Sequence[ScoredId], *, k: float = 60.0) -> list[str]:
    """The two lists fused by reciprocal rank, best first."""
    lists = [list(keyword), list(dense)]
    return [f.paper_id for f in reciprocal_rank_fusion(lists, k=k)]
