"""Searching one reader's own library: their saved papers, tag names and private notes, in plain words and
by meaning — hybrid like the main search, on a corpus small enough to score in memory.

Words: each query term (case- and accent-insensitive, a term of four letters or more also matching words
it begins, so "gait" finds "gaits") scores the papers whose note, tags, title, authors or abstract hold it,
weighted by field (a note or a tag says more about why the reader kept a paper than its abstract) and by
how rare the term is in the library. Meaning: the cosine of the query's embedding to the paper's stored
vector and to its note's. The two best-first lists are fused by reciprocal rank, as the main search does.

What a search costs is bounded by its input, not by the library (issue #41): a query has at most
:data:`MAX_LIBRARY_QUERY_TERMS` distinct words, and each is looked up in an index of the library's words
(:class:`LibraryWords`: the sorted vocabulary, each word's papers and fields), so a prefix is one range
of the vocabulary found by bisection and its papers one slice of an array — never a scan of every word of
every paper per term, which took 9 s for 50 terms over 2,000 papers.
"""

from __future__ import annotations

import bisect
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .models import Paper
from .search import ScoredId

__all__ = [
    "FIELDS",
    "FIELD_WEIGHTS",
    "MAX_LIBRARY_QUERY_CHARS",
    "MAX_LIBRARY_QUERY_TERMS",
    "MIN_MEANING",
    "LibraryDoc",
    "LibraryWords",
    "Segment",
    "best_first",
    "dense_match",
    "fields_of",
    "fuse_positions",
    "id_ranks",
    "keyword_match",
    "keyword_scores",
    "query_terms",
    "terms",
    "unit_rows",
]

MAX_LIBRARY_QUERY_CHARS = 250
MAX_LIBRARY_QUERY_TERMS = 32  # distinct words searched; the answer says when a query had more
FIELDS = ("note", "tags", "title", "authors", "abstract")  # bit i of a field mask is FIELDS[i]
FIELD_WEIGHTS = {"note": 3.0, "tags": 3.0, "title": 2.0, "authors": 2.0, "abstract": 1.0}
PREFIX_MIN = 4  # a term this long also matches the words it begins
MIN_MEANING = 0.2  # the least cosine a paper or its note counts as found by meaning at
_WORD = re.compile(r"\w+")
_LAST = "\U0010ffff"  # sorts after every character: [term, term + _LAST) holds the words term begins
Vectors = npt.NDArray[np.float32]
# The weight of a field mask: the sum of its fields' weights (a term in note and title counts 3 + 2).
_MASK_WEIGHT = np.array(
    [sum(FIELD_WEIGHTS[f] for i, f in enumerate(FIELDS) if mask >> i & 1) for mask in range(1 << len(FIELDS))]
)


def _fold(text: str) -> str:
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def terms(text: str) -> list[str]:
    """The words of ``text``, folded."""
    return _WORD.findall(_fold(text))


def query_terms(text: str) -> tuple[list[str], int]:
    """The distinct words a query searches (at most :data:`MAX_LIBRARY_QUERY_TERMS`, in the order typed),
    and how many distinct words it had."""
    wanted = list(dict.fromkeys(terms(text)))
    return wanted[:MAX_LIBRARY_QUERY_TERMS], len(wanted)


@dataclass(frozen=True, slots=True)
class LibraryDoc:
    """One paper of the library as search sees it."""

    paper: Paper
    tags: tuple[str, ...]
    note: str

    def words(self) -> dict[str, int]:
        """Each distinct word of the paper and the mask of the fields holding it (bit i: ``FIELDS[i]``)."""
        texts = (self.note, " ".join(self.tags), self.paper.title, " ".join(self.paper.authors))
        out: dict[str, int] = {}
        for bit, text in enumerate((*texts, self.paper.abstract)):
            for word in set(terms(text)):
                out[word] = out.get(word, 0) | 1 << bit
        return out


class LibraryWords:
    """An index of the words of some papers: the sorted vocabulary and, word after word, the papers
    holding each word with the mask of the fields it is in (one compressed sparse row layout).

    Words sharing a prefix are neighbours in the sorted vocabulary, so the postings of every word a term
    begins are one contiguous slice: a term costs a bisection and a slice, whatever the library's size.
    """

    __slots__ = ("_docs", "_masks", "_offsets", "ids", "vocab")

    def __init__(
        self,
        ids: Sequence[str],
        vocab: list[str],
        offsets: npt.NDArray[np.int64],
        docs: npt.NDArray[np.int32],
        masks: npt.NDArray[np.uint8],
    ) -> None:
        self.ids = tuple(ids)
        self.vocab = vocab
        self._offsets, self._docs, self._masks = offsets, docs, masks

    @classmethod
    def build(cls, ids: Sequence[str], words: Sequence[Mapping[str, int]]) -> LibraryWords:
        """The index of papers ``ids`` whose words (word -> field mask) are ``words``, row for row."""
        word_ids: dict[str, int] = {}
        posting_words: list[int] = []
        posting_docs: list[int] = []
        posting_masks: list[int] = []
        for doc, found in enumerate(words):
            for word, mask in found.items():
                posting_words.append(word_ids.setdefault(word, len(word_ids)))
                posting_docs.append(doc)
                posting_masks.append(mask)
        return cls._sorted(
            ids,
            list(word_ids),
            np.asarray(posting_words, dtype=np.int64),
            np.asarray(posting_docs, dtype=np.int32),
            np.asarray(posting_masks, dtype=np.uint8),
        )

    @classmethod
    def _sorted(
        cls,
        ids: Sequence[str],
        words: list[str],
        posting_words: npt.NDArray[np.int64],
        docs: npt.NDArray[np.int32],
        masks: npt.NDArray[np.uint8],
    ) -> LibraryWords:
        """Postings of words numbered in any order, laid out by the words' sorted order."""
        order = sorted(range(len(words)), key=words.__getitem__)
        rank = np.empty(len(words), dtype=np.int64)
        rank[np.asarray(order, dtype=np.int64)] = np.arange(len(words), dtype=np.int64)
        keys = rank[posting_words] if len(posting_words) else posting_words
        layout = np.argsort(keys, kind="stable")
        counts = np.bincount(keys, minlength=len(words)) if len(keys) else np.zeros(len(words), np.int64)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return cls(ids, [words[i] for i in order], offsets, docs[layout], masks[layout])

    @classmethod
    def merged(cls, parts: Sequence[tuple[LibraryWords, npt.NDArray[np.bool_] | None]]) -> LibraryWords:
        """One index of the papers each part keeps (``alive``, None: all), without reading a word again."""
        ids: list[str] = []
        word_ids: dict[str, int] = {}
        all_words: list[npt.NDArray[np.int64]] = []
        all_docs: list[npt.NDArray[np.int32]] = []
        all_masks: list[npt.NDArray[np.uint8]] = []
        for part, alive in parts:
            keep = np.ones(len(part.ids), dtype=bool) if alive is None else alive
            renumber = np.cumsum(keep, dtype=np.int64) - 1 + len(ids)
            ids.extend(pid for pid, kept in zip(part.ids, keep, strict=True) if kept)
            local = np.asarray([word_ids.setdefault(w, len(word_ids)) for w in part.vocab], dtype=np.int64)
            posting_words = np.repeat(local, np.diff(part._offsets)) if len(local) else local
            live = keep[part._docs]
            all_words.append(posting_words[live])
            all_docs.append(renumber[part._docs[live]].astype(np.int32))
            all_masks.append(part._masks[live])
        empty = not all_words
        return cls._sorted(
            ids,
            list(word_ids),
            np.zeros(0, np.int64) if empty else np.concatenate(all_words),
            np.zeros(0, np.int32) if empty else np.concatenate(all_docs),
            np.zeros(0, np.uint8) if empty else np.concatenate(all_masks),
        )

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def postings(self) -> int:
        return len(self._docs)

    def term_masks(self, term: str) -> npt.NDArray[np.uint8]:
        """For each paper, the mask of the fields where ``term`` is a word (or begins one)."""
        lo = bisect.bisect_left(self.vocab, term)
        if len(term) >= PREFIX_MIN:
            hi = bisect.bisect_left(self.vocab, term + _LAST, lo)
        else:
            hi = lo + 1 if lo < len(self.vocab) and self.vocab[lo] == term else lo
        out = np.zeros(len(self.ids), dtype=np.uint8)
        start, end = int(self._offsets[lo]), int(self._offsets[hi])
        if end > start:
            np.bitwise_or.at(out, self._docs[start:end], self._masks[start:end])
        return out


@dataclass(frozen=True, slots=True)
class Segment:
    """Part of a library's index, and which of its papers still count (None: all of them)."""

    words: LibraryWords
    alive: npt.NDArray[np.bool_] | None = None


def keyword_match(
    wanted: Sequence[str], segments: Sequence[Segment]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.uint8]]:
    """The keyword score of every paper of the library's ``segments`` (0: no term matched; a paper that no
    longer counts scores 0) and the mask of the fields that matched, papers in segment order: arrays, so
    ranking the whole library costs a sort in numpy rather than an object per paper."""
    live = (
        np.concatenate(
            [
                np.full(len(s.words), 0xFF, np.uint8) if s.alive is None else s.alive.astype(np.uint8) * 0xFF
                for s in segments
            ]
        )
        if segments
        else np.zeros(0, np.uint8)
    )
    n = int(np.count_nonzero(live))
    scores = np.zeros(len(live))
    why = np.zeros(len(live), dtype=np.uint8)
    if not wanted or not n:
        return scores, why
    for term in wanted:
        masks = np.concatenate([s.words.term_masks(term) for s in segments]) & live
        holders = int(np.count_nonzero(masks))
        if not holders:
            continue
        idf = math.log(1 + (n - holders + 0.5) / (holders + 0.5))
        scores += idf * _MASK_WEIGHT[masks]
        why |= masks
    return scores, why


def id_ranks(ids: Sequence[str]) -> npt.NDArray[np.int64]:
    """Each id's place in the sorted ids: the tie-break "then by id" as one integer array."""
    ranks = np.empty(len(ids), dtype=np.int64)
    ranks[np.asarray(sorted(range(len(ids)), key=ids.__getitem__), dtype=np.int64)] = np.arange(len(ids))
    return ranks


def best_first(
    scores: npt.NDArray[np.floating],
    present: npt.NDArray[np.bool_],
    ties: npt.NDArray[np.int64],
    *,
    decimals: int | None = None,
) -> npt.NDArray[np.int64]:
    """The positions where ``present``, best score first, equal scores by ``ties`` (:func:`id_ranks`);
    ``decimals``: scores equal to that many decimals are equal (sums whose last bits differ by order)."""
    at = np.flatnonzero(present)
    key = scores[at] if decimals is None else np.rint(scores[at] * 10.0**decimals)
    return at[np.lexsort((ties[at], -key))]


def fuse_positions(
    orders: Sequence[npt.NDArray[np.int64]],
    ties: npt.NDArray[np.int64],
    *,
    k: float = 60.0,
    limit: int | None = None,
) -> npt.NDArray[np.int64]:
    """Best-first lists of positions (each naming a position once) fused by reciprocal rank, as
    :func:`~paperfeed.domain.fusion.reciprocal_rank_fusion` fuses lists of ids — the same sums in the same
    order, ties by best single rank then by id — in numpy, over positions ``0 .. len(ties) - 1``."""
    score = np.zeros(len(ties))
    best = np.full(len(ties), np.iinfo(np.int64).max, dtype=np.int64)
    for order in orders:
        ranks = np.arange(1, len(order) + 1, dtype=np.int64)
        score[order] += 1.0 / (k + ranks.astype(np.float64))
        best[order] = np.minimum(best[order], ranks)
    at = np.flatnonzero(best < np.iinfo(np.int64).max)
    fused = at[np.lexsort((ties[at], best[at], -score[at]))]
    return fused if limit is None else fused[:limit]


def fields_of(mask: int) -> list[str]:
    """The names of the fields in a field mask."""
    return [f for bit, f in enumerate(FIELDS) if mask >> bit & 1]


def keyword_scores(
    wanted: Sequence[str], segments: Sequence[Segment]
) -> tuple[list[ScoredId], dict[str, set[str]]]:
    """Best-first keyword matches of the terms ``wanted`` over the library's ``segments``, and for each
    matched paper the fields that matched: :func:`keyword_match` as a list (for a few papers, and tests)."""
    scores, why = keyword_match(wanted, segments)
    ids = [pid for s in segments for pid in s.words.ids]
    order = best_first(scores, scores > 0, id_ranks(ids), decimals=9)
    return (
        [ScoredId(ids[i], float(scores[i])) for i in order],
        {ids[i]: set(fields_of(int(why[i]))) for i in order},
    )


def unit_rows(rows: npt.ArrayLike) -> Vectors:
    """``rows`` scaled to length 1 (a zero row stays zero), as float32: a cosine is then one product."""
    matrix = np.asarray(rows, dtype=np.float32)
    if matrix.ndim != 2:
        raise ValueError(f"one vector a row: got an array of shape {matrix.shape}")
    if not len(matrix):
        return matrix
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    scaled: Vectors = np.divide(matrix, np.where(norms > 0, norms, np.float32(1.0)), dtype=np.float32)
    return scaled


def dense_match(
    query: npt.ArrayLike, size: int, sources: Iterable[tuple[npt.NDArray[np.int64], Vectors]]
) -> npt.NDArray[np.float32]:
    """For each of ``size`` positions, the best cosine of ``query`` to its rows (several sources: the
    paper's stored vector, its note's; rows already :func:`unit_rows`), -inf where it has none; ``sources``
    are (positions, one row each) pairs."""
    q = unit_rows(np.asarray(query, dtype=np.float32).reshape(1, -1))[0]
    best = np.full(size, -np.inf, dtype=np.float32)
    for positions, rows in sources:
        if len(positions):
            # einsum, not ``rows @ q``: BLAS splits one matrix-vector product over threads that busy-wait
            # for each other (10,000 rows: 9 ms of CPU on a loaded 2-core machine, against 1.8 ms)
            best[positions] = np.maximum(best[positions], np.einsum("ij,j->i", rows, q))
    return best
