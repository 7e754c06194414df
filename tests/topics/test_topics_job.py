"""``topics build`` / ``place`` through the service on the real store (SQLite, then PostgreSQL)."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta

import numpy as np
import pytest
from sqlalchemy import func, select

from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.schema_topics import topic_papers, topics
from paperfeed.adapters.store.topics import SqlTopicRecords
from paperfeed.bootstrap.catalogue import topic_settings
from paperfeed.domain.topics import LineageKind, TooFewPapers, TopicAssignment
from paperfeed.services.topics import TopicService
from tests.support.defaults import DEFAULTS, topic_modeller

from .conftest import GROUPS, add_papers, group_of, save_vectors, service


def _by_group(svc: TopicService) -> dict[str, int]:
    """Which topic each group's papers are in (asserting a group is never spread over two)."""
    out: dict[str, int] = {}
    for t in svc.records.topics():
        for pid in svc.records.paper_ids(t.id, limit=10_000):
            group = group_of(pid)
            assert out.setdefault(group, t.id) == t.id, f"{group} spread over topics"
    return out


def test_build_makes_labelled_topics_with_weeks_and_representatives(topics_store: SqlPaperStore) -> None:
    svc = service(topics_store)
    summary = svc.build()
    assert (summary.build.topics, summary.build.papers, summary.without_vector) == (3, 120, 0)
    assert (summary.kept, summary.new, summary.removed) == (0, 3, 0)
    groups = _by_group(svc)
    assert sorted(groups) == sorted(GROUPS)
    for group, tid in groups.items():
        t = svc.records.topic(tid)
        assert t is not None
        assert t.size == 40
        assert group in t.words[:3], t.words  # c-TF-IDF names the group by its own words
        assert group in t.label
        assert len(t.representatives) == 5
        assert all(group_of(r) == group for r in t.representatives)
        weeks = svc.records.weeks([tid])[tid]
        assert sum(w.papers for w in weeks) == 40
        assert sum(w.upvotes for w in weeks) == sum(i % 5 for i in range(40))
        assert all(w.week.weekday() == 0 for w in weeks)
    assert svc.topic_of("pp:graph-0001") == svc.records.topic(groups["graph"])
    # ranked like the feed: most upvotes first, then newest
    first = svc.records.paper_ids(groups["graph"], limit=3)
    assert first == ["pp:graph-0004", "pp:graph-0009", "pp:graph-0014"]


def test_too_few_papers_is_a_clear_refusal_and_writes_nothing(store: SqlPaperStore) -> None:
    add_papers(store, 7)  # 21 papers: "a fresh instance with 20 papers"
    svc = service(store, min_papers=200)
    with pytest.raises(TooFewPapers, match=r"too few papers for topics: 21 with an embedding, at least 200"):
        svc.build()
    assert svc.records.current() is None
    assert svc.records.topics() == []
    assert svc.daily() == {"built": 0, "too_few": 21}
    with pytest.raises(LookupError, match="no topics yet"):
        svc.place()


def test_papers_without_an_embedding_are_skipped_and_counted(topics_store: SqlPaperStore) -> None:
    add_papers(topics_store, 4, prefix="raw", embed=False)
    summary = service(topics_store).build()
    assert (summary.build.papers, summary.without_vector) == (120, 12)


def test_a_rebuild_keeps_the_ids_of_surviving_topics(topics_store: SqlPaperStore) -> None:
    svc = service(topics_store)
    svc.build()
    before = _by_group(svc)
    add_papers(topics_store, 5, prefix="more", seed=1)
    again = svc.build()
    assert _by_group(svc) == before
    assert (again.kept, again.new, again.removed, again.build.generation) == (3, 0, 0, 2)


def test_a_merge_is_recorded_and_the_old_id_redirects_to_its_successor(topics_store: SqlPaperStore) -> None:
    svc = service(topics_store)
    svc.build()
    before = _by_group(svc)
    made = list(topics_store.get_papers([f"pp:protein-{i:04d}" for i in range(40)]).values())
    save_vectors(
        topics_store, made, np.random.default_rng(3), {"protein": "graph"}
    )  # protein now looks like graph
    svc.settings = replace(topic_settings(DEFAULTS), min_papers=30, k=2)
    summary = svc.build()
    after = _by_group(svc)
    assert after["graph"] == after["protein"]
    assert after["galaxy"] == before["galaxy"]
    assert summary.removed == 1
    gone = before["protein"] if after["graph"] == before["graph"] else before["graph"]
    assert svc.records.topic(gone) is None
    assert svc.successor(gone) == after["graph"]
    assert svc.successor(999) is None
    assert svc.successor(after["galaxy"]) == after["galaxy"]
    # a later build never hands the removed id to a new topic
    svc.settings = replace(topic_settings(DEFAULTS), min_papers=30, k=4)
    svc.build()
    assert gone not in {t.id for t in svc.records.topics()}
    assert svc.successor(gone) is not None


def test_merge_lineage_kind(topics_store: SqlPaperStore) -> None:
    from paperfeed.adapters.store.schema_topics import topic_lineage

    svc = service(topics_store)
    svc.build()
    fine = {t.id for t in svc.records.topics()}  # the coarse level keeps a lineage of its own
    made = list(topics_store.get_papers([f"pp:protein-{i:04d}" for i in range(40)]).values())
    save_vectors(topics_store, made, np.random.default_rng(3), {"protein": "graph"})
    svc.settings = replace(topic_settings(DEFAULTS), min_papers=30, k=2)
    svc.build()
    with topics_store.engine.connect() as conn:
        kinds = {r.kind for r in conn.execute(select(topic_lineage)) if r.old_id in fine}
    assert kinds == {LineageKind.MERGED.value}


def test_place_puts_new_papers_into_the_nearest_topic(topics_store: SqlPaperStore) -> None:
    svc = service(topics_store)
    svc.build()
    groups = _by_group(svc)
    galaxy_weeks = sum(w.papers for w in svc.records.weeks([groups["galaxy"]])[groups["galaxy"]])
    add_papers(topics_store, 6, prefix="new", groups=("galaxy",), seed=5)
    add_papers(topics_store, 2, prefix="unembedded", groups=("galaxy",), embed=False)
    placed = svc.place()
    assert (placed.placed, placed.remaining) == (6, 0)
    assert _by_group(svc) == groups
    t = svc.records.topic(groups["galaxy"])
    assert t is not None
    assert t.size == 46
    assert sum(w.papers for w in svc.records.weeks([groups["galaxy"]])[groups["galaxy"]]) == galaxy_weeks + 6
    assert svc.place().placed == 0  # idempotent
    assert svc.daily() == {"built": 0, "placed": 0, "remaining": 0}


def test_a_thousand_new_papers_are_placed_in_one_pass(topics_store: SqlPaperStore) -> None:
    """The daily placement of a busy day (its speed is a figure for bench/, not an assertion here)."""
    svc = service(topics_store)
    svc.build()
    records = SqlTopicRecords(topics_store.engine)
    known = {t.id for t in records.topics()}
    add_papers(topics_store, 334, prefix="daily", seed=7)
    placed = svc.place()
    assert placed.placed == 1002
    assert svc.place().placed == 0  # placed once: a second pass finds nothing new
    members = records.memberships()
    assert set(members) == known  # into the topics there were: placement makes none
    daily = [pid for group in members.values() for pid in group if "daily" in pid]
    assert len(daily) == len(set(daily)) == 1002


def test_a_build_that_fails_mid_write_leaves_the_previous_topics_served(topics_store: SqlPaperStore) -> None:
    """The generation is written in one transaction: a failure after the old rows were deleted (here a
    duplicate paper row, rejected by the primary key) rolls everything back."""
    svc = service(topics_store)
    svc.build()
    records = SqlTopicRecords(topics_store.engine)
    before = (records.current(), records.topics(), records.memberships())

    class Failing(SqlTopicRecords):
        def replace(self, generation):  # type: ignore[no-untyped-def]
            generation.assignments.append(TopicAssignment("pp:graph-0000", generation.topics[0].id, 1.0))
            return super().replace(generation)

    svc.records = Failing(topics_store.engine)
    with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
        svc.build()
    assert (records.current(), records.topics(), records.memberships()) == before
    with topics_store.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(topic_papers)).scalar() == 120
        assert conn.execute(select(func.count()).select_from(topics).where(topics.c.level == 0)).scalar() == 3


def test_overview_fills_weeks_and_reports_rising(topics_store: SqlPaperStore) -> None:
    svc = service(topics_store)
    svc.build()
    add_papers(topics_store, 30, prefix="burst", groups=("galaxy",), seed=9)  # many galaxy papers ...
    svc.place()
    overview = svc.overview(weeks=12, today=date(2026, 11, 26))
    assert overview.build is not None
    assert len(overview.topics) == 3
    assert all(len(series) == 12 for series in overview.weeks.values())
    assert all(series[-1].week == date(2026, 11, 23) for series in overview.weeks.values())
    galaxy = _by_group(svc)["galaxy"]
    assert [r.topic_id for r in overview.rising][:1] == [galaxy]  # ... mostly this week: galaxy rises
    page = svc.page(galaxy)
    assert page is not None
    assert len(page.papers) == 30
    assert {t.id for t, _ in page.neighbours} == {t.id for t in overview.topics} - {galaxy}
    assert svc.page(424242) is None


def test_labels_count_the_words_of_a_sample_in_proportion_to_each_topic(topics_store: SqlPaperStore) -> None:
    """Above ``label_sample`` papers only a per-topic share of them is read into the term counts (a million
    abstracts' 1-2-grams would take many GB); the labels still name each group by its words, and the
    weekly counts still cover every paper."""
    from collections import Counter
    from collections.abc import Sequence

    from paperfeed.adapters.store.embeddings import SqlEmbeddingStore
    from paperfeed.adapters.topic_model import SklearnTermCounter

    seen: list[list[int]] = []

    class Recording(SklearnTermCounter):
        def count(self, groups: Sequence[Sequence[str]]) -> list[Counter[str]]:
            seen.append(sorted(len(g) for g in groups))
            return super().count(groups)

    def build(sample: int) -> TopicService:
        settings = replace(
            topic_settings(DEFAULTS),
            min_papers=30,
            papers_per_topic=40,
            min_k=2,
            max_k=50,
            label_sample=sample,
        )
        svc = TopicService(
            SqlTopicRecords(topics_store.engine),
            SqlEmbeddingStore(topics_store.engine),
            topics_store,
            topic_modeller,
            Recording,
            settings,
            rebuild_after=timedelta(days=DEFAULTS.topics_rebuild_days),
            rebuild_growth=DEFAULTS.topics_rebuild_growth,
        )
        svc.build()
        return svc

    build(120)
    svc = build(30)
    assert seen == [[40, 40, 40], [10, 10, 10]]  # all 120 papers, then a quarter of each topic
    for group, tid in _by_group(svc).items():
        t = svc.records.topic(tid)
        assert t is not None
        assert t.size == 40
        assert group in t.words[:3], t.words
        assert sum(w.papers for w in svc.records.weeks([tid])[tid]) == 40
    build(3)
    assert seen[-1] == [5, 5, 5]  # at least five of each topic
