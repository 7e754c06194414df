"""The index of a library's words answers exactly what matching every word of every paper answered.

The exhaustive matching (every term against every word of every field of every paper: the cost the
security probe found, 9 s for 50 terms over 2,000 papers) is kept here as the oracle. Hypothesis draws
libraries and queries from a small alphabet, so prefixes, accents and shared words are frequent, and
checks scores and the fields named, for one index, for an index with papers dropped, and for two
segments folded into one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from paperfeed.domain.fusion import reciprocal_rank_fusion
from paperfeed.domain.library_search import (
    FIELD_WEIGHTS,
    PREFIX_MIN,
    LibraryDoc,
    LibraryWords,
    Segment,
    dense_match,
    fuse_positions,
    id_ranks,
    keyword_scores,
    query_terms,
    terms,
    unit_rows,
)
from paperfeed.domain.models import Paper
from paperfeed.domain.search import ScoredId


def _oracle(query: str, docs: Sequence[LibraryDoc]) -> tuple[dict[str, float], dict[str, set[str]]]:
    def fields(d: LibraryDoc) -> dict[str, set[str]]:
        return {
            "note": set(terms(d.note)),
            "tags": set(terms(" ".join(d.tags))),
            "title": set(terms(d.paper.title)),
            "authors": set(terms(" ".join(d.paper.authors))),
            "abstract": set(terms(d.paper.abstract)),
        }

    def matches(term: str, words: set[str]) -> bool:
        return term in words or (len(term) >= PREFIX_MIN and any(w.startswith(term) for w in words))

    every = [fields(d) for d in docs]
    scores: dict[str, float] = {}
    why: dict[str, set[str]] = {}
    for term in query_terms(query)[0]:
        holders = [i for i, f in enumerate(every) if any(matches(term, w) for w in f.values())]
        if not holders:
            continue
        idf = math.log(1 + (len(docs) - len(holders) + 0.5) / (len(holders) + 0.5))
        for i in holders:
            for name, words in every[i].items():
                if matches(term, words):
                    pid = docs[i].paper.id
                    scores[pid] = scores.get(pid, 0.0) + idf * FIELD_WEIGHTS[name]
                    why.setdefault(pid, set()).add(name)
    return scores, why


WORD = st.text(alphabet="abcdeé", min_size=1, max_size=7)
TEXT = st.lists(WORD, max_size=8).map(" ".join)


@st.composite
def _library(draw: st.DrawFn) -> list[LibraryDoc]:
    count = draw(st.integers(min_value=0, max_value=12))
    docs = []
    for n in range(count):
        paper = Paper(
            id=f"2501.{n:05d}",
            title=draw(TEXT),
            abstract=draw(TEXT),
            authors=tuple(draw(st.lists(TEXT, max_size=2))),
            published=datetime(2025, 1, 1, tzinfo=UTC),
        )
        docs.append(LibraryDoc(paper, tuple(draw(st.lists(TEXT, max_size=2))), draw(TEXT)))
    return docs


def _index(docs: Sequence[LibraryDoc]) -> LibraryWords:
    return LibraryWords.build([d.paper.id for d in docs], [d.words() for d in docs])


def _same(segments: Sequence[Segment], query: str, docs: Sequence[LibraryDoc]) -> None:
    ranked, why = keyword_scores(query_terms(query)[0], segments)
    scores, reasons = _oracle(query, docs)
    assert {s.paper_id: round(s.score, 9) for s in ranked} == {p: round(v, 9) for p, v in scores.items()}
    assert why == reasons
    ties = {p: round(v, 9) for p, v in scores.items()}  # equal sums may differ in their last bits
    assert [s.paper_id for s in ranked] == sorted(scores, key=lambda p: (-ties[p], p))


@settings(max_examples=200, deadline=None)
@given(_library(), TEXT)
def test_one_index_scores_as_matching_every_word(docs: list[LibraryDoc], query: str) -> None:
    _same([Segment(_index(docs))], query, docs)


@settings(max_examples=200, deadline=None)
@given(_library(), _library(), st.data(), TEXT)
def test_dropped_papers_and_folded_segments_score_as_the_library_they_leave(
    first: list[LibraryDoc], second: list[LibraryDoc], data: st.DataObject, query: str
) -> None:
    second = [_renamed(d) for d in second]  # other papers than the first segment's
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=len(first), max_size=len(first))), dtype=bool)
    left = [d for d, k in zip(first, keep, strict=True) if k] + second
    main, small = _index(first), _index(second)
    _same([Segment(main, keep), Segment(small)], query, left)
    folded = LibraryWords.merged([(main, keep), (small, None)])
    assert list(folded.ids) == [d.paper.id for d in left]
    _same([Segment(folded)], query, left)


def _renamed(doc: LibraryDoc) -> LibraryDoc:
    p = doc.paper
    paper = Paper(id="b" + p.id, title=p.title, abstract=p.abstract, authors=p.authors, published=p.published)
    return LibraryDoc(paper, doc.tags, doc.note)


def test_a_prefix_is_one_slice_of_the_sorted_vocabulary() -> None:
    docs = [
        LibraryDoc(Paper(id="a", title="Gaits of zebrafish", abstract="", published=None), (), ""),
        LibraryDoc(Paper(id="b", title="Gait", abstract="", published=None), ("gaiters",), ""),
        LibraryDoc(Paper(id="c", title="Gaze", abstract="", published=None), (), "gai"),
    ]
    index = _index(docs)
    assert index.vocab == sorted(index.vocab)
    assert index.term_masks("gait").tolist() == [0b00100, 0b00110, 0]  # title; title and tags
    assert index.term_masks("gai").tolist() == [0, 0, 0b00001]  # three letters: whole words only
    assert index.term_masks("zzzz").tolist() == [0, 0, 0]


_IDS = st.lists(st.sampled_from([f"p{n}" for n in range(12)]), unique=True, max_size=12)


@settings(max_examples=300, deadline=None)
@given(_IDS, _IDS, st.sampled_from([0.0, 1.0, 60.0]))
def test_fusing_positions_ranks_as_fusing_lists_of_ids(first: list[str], second: list[str], k: float) -> None:
    """The library's fusion in numpy (over positions) is reciprocal rank fusion of the same lists, the
    same sums in the same order and the same ties (best single rank, then id)."""
    ids = sorted({*first, *second}, reverse=True)  # positions not in id order: the tie-break must say
    at = {pid: i for i, pid in enumerate(ids)}
    lists = [np.asarray([at[p] for p in ranked], dtype=np.int64) for ranked in (first, second)]
    fused = fuse_positions(lists, id_ranks(ids), k=k)
    expected = reciprocal_rank_fusion([[ScoredId(p, 1.0) for p in ranked] for ranked in (first, second)], k=k)
    assert [ids[i] for i in fused] == [f.paper_id for f in expected]
    assert [ids[i] for i in fuse_positions(lists, id_ranks(ids), k=k, limit=3)] == [
        f.paper_id for f in expected[:3]
    ]


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=6), st.integers(min_value=0, max_value=2**31), st.data())
def test_meaning_is_the_best_cosine_of_a_papers_own_vector_and_its_notes(
    size: int, seed: int, data: st.DataObject
) -> None:
    """Each position's score is its closest source (paper or note) by cosine, whatever the vectors'
    lengths; a position with no vector has none (-inf), never 0."""
    rng = np.random.default_rng(seed)
    query = rng.standard_normal(5).astype(np.float32) * 3
    sources = []
    for _ in range(2):
        positions = np.asarray(
            data.draw(st.lists(st.integers(0, max(0, size - 1)), unique=True, max_size=size)) if size else [],
            dtype=np.int64,
        )
        rows = rng.standard_normal((len(positions), 5)).astype(np.float32) * rng.uniform(0.5, 4)
        sources.append((positions, rows))
    got = dense_match(query, size, [(p, unit_rows(r)) for p, r in sources])
    for i in range(size):
        cosines = [
            float(r[j] @ query) / float(np.linalg.norm(r[j]) * np.linalg.norm(query))
            for p, r in sources
            for j in np.flatnonzero(p == i)
        ]
        if cosines:
            assert abs(float(got[i]) - max(cosines)) < 1e-5
        else:
            assert got[i] == -np.inf
