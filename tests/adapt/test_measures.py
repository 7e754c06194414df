"""The pure parts of adaptation: who is held out, the held-out measures, and the gate."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
import pytest

from paperfeed.domain.adaptation import (
    MIN_HELD_OUT,
    MIN_PAPERS,
    AdaptOptions,
    CitationPairs,
    CorpusPaper,
    Quality,
    TrainingPair,
    cap_pairs,
    decide,
    measure,
    split_corpus,
    title_abstract_pairs,
)

from .conftest import StoredLinks


def _papers(n: int) -> list[CorpusPaper]:
    return [CorpusPaper(f"2501.{i:05d}", f"title {i}", f"abstract {i}", f"cat{i % 3}") for i in range(n)]


def test_split_holds_out_a_fifth_never_trained_on_and_is_stable() -> None:
    papers = _papers(200)
    split = split_corpus(papers, AdaptOptions())
    assert len(split.held_out) == 40
    assert len(split.train) == 160
    held = {p.paper_id for p in split.held_out}
    assert not held & {p.paper_id for p in split.train}
    assert not held & {p.paper_id for p in split.distractors}
    again = split_corpus(list(reversed(papers)), AdaptOptions())
    assert [p.paper_id for p in again.held_out] == [p.paper_id for p in split.held_out]


def test_split_bounds() -> None:
    split = split_corpus(_papers(MIN_PAPERS), AdaptOptions())
    assert len(split.held_out) == MIN_HELD_OUT
    capped = split_corpus(_papers(1000), AdaptOptions(max_papers=100, eval_papers=50, distractors=30))
    assert (len(capped.train), len(capped.held_out), len(capped.distractors)) == (100, 50, 30)


def test_split_says_how_many_papers_are_needed() -> None:
    papers = [*_papers(MIN_PAPERS - 1), CorpusPaper("x", "no abstract", "")]
    with pytest.raises(
        ValueError, match=f"needs at least {MIN_PAPERS} papers .* the store has {MIN_PAPERS - 1}"
    ):
        split_corpus(papers, AdaptOptions())


def test_pairs_are_title_to_abstract() -> None:
    pairs = title_abstract_pairs(_papers(2))
    assert [(p.anchor, p.positive) for p in pairs] == [("title 0", "abstract 0"), ("title 1", "abstract 1")]


def test_citation_pairs_join_the_texts_of_citing_and_cited_training_papers() -> None:
    papers = _papers(4)
    ids = [p.paper_id for p in papers]
    edges = [(ids[0], ids[1]), (ids[2], ids[0]), (ids[0], "not-a-training-paper"), (ids[3], ids[3])]
    pairs = CitationPairs(StoredLinks(edges))(papers)
    assert [(p.anchor, p.positive) for p in pairs] == [
        ("title 0. abstract 0", "title 1. abstract 1"),
        ("title 2. abstract 2", "title 0. abstract 0"),
    ]


def test_citation_pairs_cap_what_one_paper_contributes() -> None:
    papers = _papers(30)
    survey = papers[0].paper_id
    pairs = CitationPairs(StoredLinks([(survey, p.paper_id) for p in papers[1:]]), per_paper=5)(papers)
    assert len(pairs) == 5
    assert CitationPairs(StoredLinks([]))(papers) == []


def test_a_pair_cap_keeps_each_sources_share_a_stable_sample_in_the_sources_order() -> None:
    titles = [TrainingPair(f"t{i}", f"a{i}") for i in range(300)]
    cites = [TrainingPair(f"c{i}", f"d{i}") for i in range(100)]
    capped = dict(cap_pairs([("titles", titles), ("cites", cites), ("none", [])], 40))
    assert {k: len(v) for k, v in capped.items()} == {"titles": 30, "cites": 10, "none": 0}
    assert capped["titles"] == sorted(capped["titles"], key=titles.index)  # the source's own order
    again = dict(cap_pairs([("titles", list(reversed(titles))), ("cites", cites)], 40))
    assert set(again["titles"]) == set(capped["titles"]), "the sample depends on the pairs, not their order"
    assert dict(cap_pairs([("titles", titles)], None))["titles"] == titles
    assert dict(cap_pairs([("titles", titles)], 300))["titles"] == titles
    few = dict(cap_pairs([("titles", titles), ("cites", cites[:1])], 40))
    assert len(few["cites"]) == 1, "a small source keeps a pair"


Vectors = npt.NDArray[np.float32]


def _lookup(table: dict[str, list[float]]) -> Callable[[Sequence[str]], Vectors]:
    def embed(texts: Sequence[str]) -> Vectors:
        rows = np.array([table[t] for t in texts], dtype=np.float32)
        out: Vectors = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        return out

    return embed


def test_measure_ranks_each_title_against_every_abstract() -> None:
    held = [CorpusPaper("a", "ta", "aa", "x"), CorpusPaper("b", "tb", "ab", "y")]
    distractors = [CorpusPaper("c", "tc", "ac", "x")]
    vectors: dict[str, list[float]] = {
        "ta": [1, 0, 0],
        "aa": [1, 0.1, 0],  # a's abstract is nearest its title: rank 1
        "tb": [0, 1, 0],
        "ab": [0, 0.5, 1],  # b's abstract is beaten by the distractor c: rank 2
        "ac": [0.2, 1, 0],
    }
    q = measure(_lookup(vectors), held, distractors)
    assert q.queries == 2
    assert q.candidates == 3
    assert q.mrr == pytest.approx((1 + 1 / 2) / 2)
    assert q.ndcg10 == pytest.approx((1 + 1 / np.log2(3)) / 2)
    # nearest abstracts of aa: ac (x) then ab (y); of ab: ac (x), aa (x); k = 2 candidates each
    assert q.category_at10 == pytest.approx((1 / 2 + 0 / 2) / 2)


def _q(ndcg: float, cat: float | None = 0.5) -> Quality:
    return Quality(mrr=ndcg, ndcg10=ndcg, category_at10=cat, queries=10, candidates=100)


def test_gate() -> None:
    assert decide(_q(0.5), _q(0.6), 0.0).adopt
    assert not decide(_q(0.5), _q(0.5), 0.0).adopt  # a tie keeps the base
    assert not decide(_q(0.5), _q(0.6), 0.2).adopt
    assert decide(_q(0.5), _q(0.4), -1.0).adopt
    lost = decide(_q(0.5, 0.6), _q(0.7, 0.5), 0.0)
    assert not lost.adopt
    assert "category agreement@10 fell" in lost.reason
    assert decide(_q(0.5, None), _q(0.6, None), 0.0).adopt
