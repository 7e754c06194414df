"""The one-line summary's pure parts: which sentence is chosen, whose summary is shown, when a stored one
still holds."""

from __future__ import annotations

import numpy as np

from paperfeed.domain.models import Paper
from paperfeed.domain.sentences import ROLES, Role, Sentence
from paperfeed.domain.summaries import (
    SUMMARY_RULE,
    SummaryRule,
    current_summary,
    extract_summary,
    one_line,
    pick_summary,
    summary_key,
)

ABSTRACT = (
    "Large language models are everywhere. "
    "We propose a cheap method that prunes attention heads without retraining. "
    "We train on four datasets. "
    "Pruning halves latency while keeping accuracy within one point."
)


def _sentences(text: str, roles: list[Role]) -> tuple[Sentence, ...]:
    out: list[Sentence] = []
    at = 0
    for role, piece in zip(roles, [s + "." for s in text.rstrip(".").split(". ")], strict=True):
        start = text.index(piece, at)
        at = start + len(piece)
        p = [0.01] * len(ROLES)
        p[ROLES.index(role)] = 0.96
        out.append(Sentence(start, at, role, tuple(p)))
    return tuple(out)


SENTENCES = _sentences(ABSTRACT, ["background", "objective", "method", "result"])


def test_role_weights_choose_the_sentence() -> None:
    assert pick_summary(ABSTRACT, SENTENCES, None, SummaryRule(objective=1.0)) == 1
    assert pick_summary(ABSTRACT, SENTENCES, None, SummaryRule(result=1.0)) == 3
    assert pick_summary(ABSTRACT, SENTENCES, None, SummaryRule(first=1.0, min_words=1)) == 0
    # a tie goes to the earliest sentence that fits (the first has five words, under min_words)
    assert pick_summary(ABSTRACT, SENTENCES, None, SummaryRule()) == 1


def test_centrality_needs_the_vectors() -> None:
    vectors = np.array([[1, 0, 0], [0.6, 0.8, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32)
    # the mean points between the first three; the second sentence lies nearest it
    assert pick_summary(ABSTRACT, SENTENCES, vectors, SummaryRule(centrality=1.0)) == 1


def test_too_short_or_too_long_sentences_are_passed_over_unless_nothing_fits() -> None:
    short = SummaryRule(background=1.0, min_words=6)  # "Large language models are everywhere." has 5
    assert pick_summary(ABSTRACT, SENTENCES, None, short) != 0
    nothing_fits = SummaryRule(background=1.0, min_words=50)
    assert pick_summary(ABSTRACT, SENTENCES, None, nothing_fits) == 0
    assert pick_summary("", (), None) is None


def test_extract_summary_keeps_the_text_and_rule_it_was_chosen_for() -> None:
    found = extract_summary("2501.1", ABSTRACT, "abc", SENTENCES, None, SummaryRule(objective=1.0))
    assert found.line == "We propose a cheap method that prunes attention heads without retraining."
    assert found.key == summary_key("abc", SummaryRule(objective=1.0))
    assert found.key.startswith("abc/")
    empty = extract_summary("2501.2", "", "def", (), None)
    assert (empty.line, empty.key) == (None, summary_key("def"))


def test_rule_ids_differ_by_weights_and_limits() -> None:
    ids = {
        SUMMARY_RULE.rule_id,
        SummaryRule(objective=1.0).rule_id,
        SummaryRule(objective=1.0, max_words=40).rule_id,
    }
    assert len(ids) == 3


def test_a_stored_summary_holds_only_for_the_text_it_was_chosen_for() -> None:
    assert current_summary("A line.", "abc/r1", "abc") == "A line."
    assert current_summary("A line.", "abc/r0", "abc") == "A line."  # an older rule: still that text
    assert current_summary("A line.", "old/r1", "abc") is None  # the abstract changed since
    assert current_summary(None, "abc/r1", "abc") is None
    assert current_summary("A line.", None, "abc") is None


def test_hugging_face_summary_wins_and_each_is_labelled() -> None:
    hf = one_line("  HF says   this. ", "Extracted one.")
    assert hf is not None
    assert (hf.text, hf.source, hf.label) == ("HF says this.", "hugging_face", "AI summary by Hugging Face")
    extracted = one_line(None, "Extracted one.")
    assert extracted is not None
    assert (extracted.source, extracted.labelled) == (
        "extracted",
        "Extracted from the abstract: Extracted one.",
    )
    assert one_line("", None) is None
    paper = Paper(id="2501.3", title="T", ai_summary="From HF.", extracted_summary="From the abstract.")
    assert paper.one_line is not None
    assert paper.one_line.source == "hugging_face"
