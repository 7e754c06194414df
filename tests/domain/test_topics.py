"""The pure rules of topics: c-TF-IDF labels, stable ids across rebuilds, weeks and "rising"."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import date, datetime

from paperfeed.bootstrap.catalogue import topic_settings
from paperfeed.domain.topics import (
    LineageKind,
    WeekCount,
    choose_k,
    ctfidf,
    label_of,
    match_topics,
    merge_inflections,
    rising,
    week_of,
    weekly_counts,
)
from tests.support.defaults import DEFAULTS


def test_ctfidf_weighs_terms_frequent_here_and_rare_elsewhere() -> None:
    counts = [{"graph": 4, "model": 2}, {"model": 2, "protein": 2}]
    # A = (6 + 4) / 2 = 5; f(graph) = 4, f(model) = 4, f(protein) = 2
    top = ctfidf(counts, 2)
    assert top[0][0] == ("graph", 4 * math.log(1 + 5 / 4))
    assert top[0][1] == ("model", 2 * math.log(1 + 5 / 4))
    assert top[1][0] == ("protein", 2 * math.log(1 + 5 / 2))  # rarer overall: ahead of "model"
    assert ctfidf([], 3) == []


def test_label_skips_terms_an_earlier_term_already_shows() -> None:
    assert label_of(["graph neural", "graph", "neural", "networks", "gnn"]) == "graph neural, networks, gnn"
    assert label_of([]) == "(no words)"


SINGULARS = {"models": "model", "agents": "agent", "llms": "llm", "bias": "bia", "data": "datum"}


def test_a_words_singular_and_plural_count_as_one_term_written_as_the_texts_write_it_most() -> None:
    counts = [
        {"models": 5, "model": 2, "language models": 3, "language model": 1, "language": 4},
        {"agents": 1, "agent": 3, "agents act": 2, "bias": 2, "data": 2},
    ]
    merged = merge_inflections(counts, SINGULARS.get)
    # "models" is the more used form (5 + 3 + 0 against 2 + 1): every term writes it so
    assert merged[0] == {"models": 7, "language models": 4, "language": 4}
    # "agent" 3 + 0 against "agents" 1 + 2: a tie goes to the shorter form
    assert merged[1] == {"agent": 4, "agent act": 2, "bias": 2, "data": 2}  # bia, datum: never written


def test_labels_no_longer_repeat_a_word_in_two_forms() -> None:
    """#40 item 10: "models, language, model" and "agents, agent, language" were labels of real topics."""
    counts = [
        {"models": 9, "language": 8, "model": 7, "reasoning": 3},
        {"agents": 9, "agent": 8, "language": 7, "tools": 3},
        {"protein": 9, "folding": 5, "structure": 3},
    ]
    before = [label_of([t for t, _ in top]) for top in ctfidf(counts, 5)]
    assert before[:2] == ["models, model, language", "agents, agent, language"]  # what a reader saw
    after = [label_of([t for t, _ in top]) for top in ctfidf(merge_inflections(counts, SINGULARS.get), 5)]
    assert after[:2] == ["models, language, reasoning", "agents, language, tools"]


def test_choose_k_fixed_or_one_per_papers_per_topic_within_bounds() -> None:
    s = replace(topic_settings(DEFAULTS), papers_per_topic=100, min_k=8, max_k=50)
    assert choose_k(3000, s) == 30
    assert choose_k(100_000, s) == 50
    assert choose_k(300, s) == 8
    assert choose_k(10, s) == 5  # never more than half the papers
    assert choose_k(1000, replace(topic_settings(DEFAULTS), k=12)) == 12


def _set(prefix: str, n: int) -> frozenset[str]:
    return frozenset(f"{prefix}{i}" for i in range(n))


def test_surviving_clusters_keep_their_ids_and_new_ones_get_unused_ids() -> None:
    old = {3: _set("a", 10), 7: _set("b", 10)}
    new = [_set("b", 9) | {"x"}, _set("c", 5)]  # b's papers (Jaccard 9/11) and something new
    match = match_topics(old, new, next_id=12)
    assert match.ids == [7, 12]  # the new id is the counter's, not max(old) + 1: ids are never reused
    assert match.next_id == 13
    assert match.lineage == []  # a's papers are gone from the store: no successor


def test_jaccard_below_the_threshold_is_a_new_topic() -> None:
    old = {1: _set("a", 10)}
    new = [_set("a", 4) | _set("z", 4)]  # 4 shared of 14: 0.29
    match = match_topics(old, new, next_id=2)
    assert match.ids == [2]
    # 40 % of the old topic's papers went to the new one (>= lineage_share 0.3): its successor
    assert [(ln.old_id, ln.new_id, ln.share, ln.kind) for ln in match.lineage] == [
        (1, 2, 0.4, LineageKind.REPLACED)
    ]
    assert match_topics(old, new, next_id=2, lineage_share=0.5).lineage == []


def test_a_merge_and_a_split_are_recorded() -> None:
    old = {1: _set("a", 10), 2: _set("b", 4), 3: _set("c", 10)}
    merged = _set("a", 10) | _set("b", 4)  # a absorbs b: a keeps its id (10/14), b merged into it
    halves = [frozenset(f"c{i}" for i in range(4)), frozenset(f"c{i}" for i in range(4, 8))]  # 0.4 each
    match = match_topics(old, [merged, *halves], next_id=4)
    assert match.ids == [1, 4, 5]
    kinds = {(ln.old_id, ln.new_id): ln.kind for ln in match.lineage}
    assert kinds == {(2, 1): LineageKind.MERGED, (3, 4): LineageKind.SPLIT, (3, 5): LineageKind.SPLIT}


def test_one_old_topic_gives_its_id_to_one_new_cluster_only() -> None:
    old = {1: _set("a", 10)}
    new = [_set("a", 10), _set("a", 10)]  # a degenerate clustering: two equal clusters
    assert match_topics(old, new, next_id=2).ids == [1, 2]


def test_weeks_start_on_monday() -> None:
    assert week_of(date(2026, 11, 24)) == date(2026, 11, 23)  # a Tuesday
    assert week_of(datetime(2026, 11, 29, 23, 59)) == date(2026, 11, 23)  # Sunday night
    assert week_of(date(2026, 11, 23)) == date(2026, 11, 23)
    rows = [
        (1, date(2026, 11, 24), 3),
        (1, date(2026, 11, 25), None),
        (2, None, 5),
        (1, date(2026, 11, 2), 1),
    ]
    assert weekly_counts(rows) == {
        1: [WeekCount(date(2026, 11, 2), 1, 1), WeekCount(date(2026, 11, 23), 2, 3)]
    }


def test_rising_is_the_smoothed_log_lift_of_this_weeks_share() -> None:
    this = date(2026, 11, 23)
    before = [date(2026, 11, 16), date(2026, 11, 9)]
    weeks = {
        1: [WeekCount(this, 6)] + [WeekCount(w, 1) for w in before],  # 6 now, 2 before
        2: [WeekCount(this, 4)] + [WeekCount(w, 9) for w in before],  # 4 now, 18 before
        3: [WeekCount(this, 2)],  # below min_papers
        4: [WeekCount(date(2026, 1, 5), 50)],  # outside the window entirely
    }
    totals = [WeekCount(this, 12)] + [WeekCount(w, 10) for w in before]  # 12 now, 20 before
    out = rising(weeks, totals, date(2026, 11, 26))
    assert [r.topic_id for r in out] == [1]
    (r,) = out
    assert r.score == math.log(7 / 16) - math.log(3 / 24)
    assert (r.papers, r.share, r.before) == (6, 0.5, 0.1)
    # with min_papers 1 the small topic with no paper before rises most: (2+1)/16 against (0+1)/24
    assert [r.topic_id for r in rising(weeks, totals, this, min_papers=1)] == [3, 1]
    assert rising(weeks, totals, this, previous=1)[0].score == math.log(7 / 16) - math.log(2 / 14)
