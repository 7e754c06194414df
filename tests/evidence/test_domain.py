"""The pure parts of evidence search: roles asked for, question-shaped queries, keys, and the fusion."""

from __future__ import annotations

from dataclasses import replace

import pytest

from paperfeed.domain.evidence import (
    EvidenceWeights,
    candidate_keys,
    fuse_sentences,
    looks_like_question,
    parse_roles,
    sentence_key,
    split_key,
)

W = EvidenceWeights(
    rrf_k=5,
    keyword=1,
    dense=1,
    paper=1,
    paper_k=5,
    keyword_depth=10,
    dense_depth=10,
    paper_depth=2,
    per_paper=0,
    min_cosine=-1.0,
)


def test_roles_by_name_or_plural_and_a_bad_one_names_the_choices() -> None:
    assert parse_roles(None) is None
    assert parse_roles("") is None
    assert parse_roles("results") == frozenset({"result"})
    assert parse_roles(" Method , result") == frozenset({"method", "result"})
    assert parse_roles(["background", "objective"]) == frozenset({"background", "objective"})
    assert parse_roles("background,objective,method,result,other") is None  # every role: no filter
    with pytest.raises(ValueError, match="background, objective, method, result, other"):
        parse_roles("findings")


def test_questions_and_claims_are_told_from_topics() -> None:
    assert looks_like_question("does layer normalization help small batches?")
    assert looks_like_question("Is dropout useful")
    assert looks_like_question("quantization to 4 bits keeps accuracy of large language models")
    assert not looks_like_question("diffusion transformer")
    assert not looks_like_question('author:"Yann LeCun" convolution')
    assert not looks_like_question("")


def test_keys_keep_a_paper_id_that_holds_a_hash() -> None:
    assert split_key(sentence_key("scifact:12#b", 7)) == ("scifact:12#b", 7)


def test_a_sentence_of_the_paper_answering_the_question_outranks_a_lone_phrase_match() -> None:
    lone, answer = sentence_key("lone", 1), sentence_key("answer", 2)
    # the lone phrase is the best keyword match and about as close by meaning, but its paper ranks low
    fused = fuse_sentences([lone, answer], {lone: 0.61, answer: 0.60}, {"answer": 1, "lone": 40}, W)
    assert [f.key for f in fused] == [answer, lone]
    without_prior = fuse_sentences([lone, answer], {lone: 0.61, answer: 0.60}, {}, replace(W, paper=0.0))
    assert [f.key for f in without_prior] == [lone, answer]
    assert fused[0].paper_rank == 1
    assert fused[0].keyword_rank == 2
    assert fused[0].dense_rank == 2


def test_candidates_take_every_sentence_of_the_top_papers_once() -> None:
    keys = candidate_keys(
        ["a#0", "b#1"], ["b#1", "c#0"], ["a", "d", "e"], {"a": [0, 1], "d": [2], "e": [0]}, W
    )
    assert keys == ["a#0", "b#1", "c#0", "a#1", "d#2"]  # paper_depth 2: e's sentences are not taken


def test_per_paper_caps_one_paper_at_the_top() -> None:
    cosines = {"a#0": 0.9, "a#1": 0.89, "a#2": 0.88, "b#0": 0.5}
    capped = fuse_sentences([], cosines, {}, replace(W, per_paper=2))
    assert [f.key for f in capped] == ["a#0", "a#1", "b#0", "a#2"]


def test_the_meaning_floor_answers_nothing_when_no_sentence_comes_close_to_the_question() -> None:
    near, far, unknown = sentence_key("a", 0), sentence_key("b", 0), sentence_key("c", 0)
    floor = replace(W, min_cosine=0.4)
    cosines = {near: 0.5, far: 0.05}  # ``unknown`` has no vector
    # one sentence comes close: every candidate ranks, the far one too (the floor is not a per-sentence cut)
    assert {f.key for f in fuse_sentences([far, unknown, near], cosines, {"b": 1}, floor)} == {
        near,
        far,
        unknown,
    }
    # none does: nothing bears on the question, however well its words match
    assert fuse_sentences([far, unknown], {far: 0.05, unknown: 0.39}, {"b": 1}, floor) == []
    assert len(fuse_sentences([far, unknown], {far: 0.05, unknown: 0.39}, {"b": 1}, W)) == 2  # no floor
    assert [f.key for f in fuse_sentences([far], {}, {}, floor)] == [far]  # no meaning leg: no floor
