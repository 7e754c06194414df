"""Topics at two levels, the UMAP layout and the placement's map places (SQLite and PostgreSQL).

Six synthetic groups in three pairs: each pair shares a direction (a "field") and differs in a second
one, so k-means finds six fine topics and the coarse level (k = 3) groups each pair. No timing asserts.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import numpy as np
import pytest
from sqlalchemy import func, select

from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.embeddings import SqlEmbeddingStore
from paperfeed.adapters.store.schema_topics import topic_papers, topics
from paperfeed.adapters.store.topics import SqlTopicRecords
from paperfeed.domain.embedding import PendingPaper
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper, content_hash
from paperfeed.domain.topics import TopicAssignment
from tests.support.defaults import topic_modeller

from .conftest import DIM, MODEL, NOW, service

PAIRS = {"graph": 0, "message": 0, "protein": 1, "folding": 1, "galaxy": 2, "survey": 2}
WORDS = {
    "graph": "graph neural networks",
    "message": "message passing layers",
    "protein": "protein structure prediction",
    "folding": "folding kinetics simulation",
    "galaxy": "galaxy dark matter halos",
    "survey": "survey telescope photometry",
}


def vec(group: str, rng: np.random.Generator) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[PAIRS[group]] = 1.0  # the field
    v[3 + list(WORDS).index(group)] = 0.6  # the group within it
    v += rng.normal(0, 0.04, DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def add(store: SqlPaperStore, per_group: int, *, prefix: str = "lv", seed: int = 0) -> list[Paper]:
    rng = np.random.default_rng(seed)
    made = [
        Paper(
            id=f"{prefix}:{g}-{i:04d}",
            title=f"{WORDS[g].split()[0].title()} paper {i}",
            abstract=f"We study {WORDS[g]} carefully.",
            authors=("Ada Lovelace",),
            categories=("cs.LG",),
            published=NOW - timedelta(days=i % 30),
            updated=NOW,
            upvotes=i % 4,
            sources={"test": f"{prefix}{g}{i}"},
        )
        for g in WORDS
        for i in range(per_group)
    ]
    store.apply_batch(Batch(papers=made))
    pending = [
        PendingPaper(p.id, p.title, p.abstract, content_hash(p.title, p.abstract), False) for p in made
    ]
    vectors = np.vstack([vec(p.id.split(":")[1].split("-")[0], rng) for p in made])
    SqlEmbeddingStore(store.engine).save_vectors(MODEL, pending, vectors)
    return made


def group(paper_id: str) -> str:
    return paper_id.split(":")[1].split("-")[0]


@pytest.fixture
def levels_store(store: SqlPaperStore) -> SqlPaperStore:
    add(store, 30)  # 180 papers
    return store


def _svc(store: SqlPaperStore):  # type: ignore[no-untyped-def]
    return service(store, k=6, coarse_k=3)


def test_a_build_writes_both_levels_with_parents_sizes_labels_and_weeks(levels_store: SqlPaperStore) -> None:
    svc = _svc(levels_store)
    summary = svc.build()
    assert (summary.build.topics, summary.build.coarse) == (6, 3)
    records = svc.records
    fine, coarse = records.topics(), records.topics(level=1)
    assert len(fine) == 6
    assert len(coarse) == 3
    assert {t.level for t in fine} == {0}
    assert {t.level for t in coarse} == {1}
    assert all(t.parent_id is None for t in coarse)
    by_id = {t.id: t for t in coarse}
    for t in fine:
        assert t.parent_id in by_id
    for c in coarse:
        children = [t for t in fine if t.parent_id == c.id]
        assert c.size == sum(t.size for t in children) == 60
        fields = {PAIRS[group(pid)] for t in children for pid in records.paper_ids(t.id, limit=1000)}
        assert len(fields) == 1  # each coarse topic is one pair
        assert len(records.paper_ids(c.id, limit=1000)) == 60  # a coarse topic's papers are its children's
        assert c.label != "(no words)"
        assert len(c.representatives) == 5
        assert sum(w.papers for w in records.weeks([c.id])[c.id]) == 60
    members = records.memberships(level=1)
    assert sorted(len(m) for m in members.values()) == [60, 60, 60]
    assert sum(w.papers for w in records.total_weeks()) == 180  # each paper counted once, not per level
    assert records.topic_of("lv:graph-0000") in fine
    overview = svc.overview(level=1)
    assert {t.id for t in overview.topics} == set(by_id)
    assert {t.id for t in svc.overview(level=None).topics} == set(by_id) | {t.id for t in fine}
    page = svc.page(coarse[0].id, limit=100)
    assert page is not None
    assert len(page.papers) == 60
    assert {n.id for n, _ in page.neighbours} == set(by_id) - {coarse[0].id}


def test_coarse_ids_survive_a_rebuild_and_new_ones_never_reuse_an_id(levels_store: SqlPaperStore) -> None:
    svc = _svc(levels_store)
    svc.build()
    first = {t.id: (t.parent_id, t.size) for t in svc.records.topics(level=None)}
    add(levels_store, 5, prefix="more", seed=7)  # a few more papers: the same clusters
    svc.build()
    second = {t.id: (t.parent_id, t.size) for t in svc.records.topics(level=None)}
    assert set(second) == set(first)  # fine and coarse ids kept
    assert all(second[t][0] == first[t][0] for t in first)  # the same parents
    assert all(second[t][1] > first[t][1] for t in first)
    # fewer coarse topics: two pairs merge; the merged coarse topic keeps one old id, the other redirects
    svc = service(levels_store, k=6, coarse_k=2)
    svc.build()
    coarse = {t.id for t in svc.records.topics(level=1)}
    old_coarse = {t for t, (parent, _) in first.items() if parent is None}
    assert len(coarse) == 2
    assert len(coarse & old_coarse) >= 1
    for gone in old_coarse - coarse:
        assert svc.successor(gone) in coarse
    assert not coarse & {t for t in first if first[t][0] is not None}  # no fine id reused for a coarse one


def test_the_layout_is_deterministic_and_separates_the_groups(levels_store: SqlPaperStore) -> None:
    svc = _svc(levels_store)
    svc.build()

    def places() -> dict[str, tuple[float, float]]:
        with levels_store.engine.connect() as conn:
            rows = conn.execute(select(topic_papers.c.paper_id, topic_papers.c.x, topic_papers.c.y))
            return {pid: (x, y) for pid, x, y in rows}

    first = places()
    svc.build()
    assert places() == first  # the same seed, the same map
    xy = np.array(list(first.values()))
    fields = np.array([PAIRS[group(pid)] for pid in first])
    assert np.ptp(xy, axis=0).min() > 0  # a real 2-D spread, not a line or a point
    centres = np.vstack([xy[fields == f].mean(axis=0) for f in range(3)])
    spread = max(np.linalg.norm(xy[fields == f] - centres[f], axis=1).mean() for f in range(3))
    apart = min(np.linalg.norm(centres[a] - centres[b]) for a in range(3) for b in range(a + 1, 3))
    assert apart > spread  # each field is a region of its own


def test_a_layout_fitted_on_a_sample_places_the_rest_among_their_group() -> None:
    rng = np.random.default_rng(1)
    groups = [g for g in WORDS for _ in range(40)]
    vectors = np.vstack([vec(g, rng) for g in groups])
    labels = [list(WORDS).index(g) for g in groups]
    modeller = topic_modeller()
    a = modeller.layout(vectors, labels, seed=0, sample=90, neighbours=5)  # 90 fitted, 150 placed
    b = modeller.layout(vectors, labels, seed=0, sample=90, neighbours=5)
    assert np.array_equal(a, b)
    fine = np.asarray(labels)
    for g in range(6):
        inside = a[fine == g]
        centre = inside.mean(axis=0)
        others = a[fine != g]
        # every paper is nearer its own group's centre than the average paper of other groups is
        assert np.linalg.norm(inside - centre, axis=1).max() < np.linalg.norm(others - centre, axis=1).mean()


def test_placement_gives_a_map_place_among_its_topic_and_raises_the_coarse_topic(
    levels_store: SqlPaperStore,
) -> None:
    svc = _svc(levels_store)
    svc.build()
    records = svc.records
    before = {t.id: t for t in records.topics(level=None)}
    coarse_weeks = {t: sum(w.papers for w in s) for t, s in records.weeks().items()}
    new = add(levels_store, 4, prefix="new", seed=5)  # 24 new papers, 4 per group
    assert svc.place().placed == 24
    with levels_store.engine.connect() as conn:
        rows = conn.execute(select(topic_papers.c.paper_id, topic_papers.c.x, topic_papers.c.y)).all()
    xy = {pid: np.array([x, y]) for pid, x, y in rows}
    for p in new:
        t = records.topic_of(p.id)
        assert t is not None
        assert t.parent_id is not None
        mates = [xy[q] for q in records.paper_ids(t.id, limit=1000) if not q.startswith("new:")]
        low, high = np.min(mates, axis=0), np.max(mates, axis=0)
        assert np.all(xy[p.id] >= low)
        assert np.all(xy[p.id] <= high)
        assert not np.allclose(xy[p.id], [t.x, t.y])  # its own place, not the topic's centre
    after = {t.id: t for t in records.topics(level=None)}
    weeks = {t: sum(w.papers for w in s) for t, s in records.weeks().items()}
    for tid, t in before.items():
        if t.level == 1:
            assert after[tid].size == t.size + 8  # two fine topics of 4 new papers each
            assert weeks[tid] == coarse_weeks[tid] + 8


def test_a_failed_write_leaves_both_levels_of_the_previous_build(levels_store: SqlPaperStore) -> None:
    svc = _svc(levels_store)
    svc.build()
    records = SqlTopicRecords(levels_store.engine)
    before = (records.current(), records.topics(level=None), records.memberships(1), records.weeks())

    class Failing(SqlTopicRecords):
        def replace(self, generation):  # type: ignore[no-untyped-def]
            fine = next(t for t in generation.topics if t.level == 0)
            generation.assignments.append(TopicAssignment("lv:graph-0000", fine.id, 1.0))
            return super().replace(generation)

    svc.records = Failing(levels_store.engine)
    svc.settings = replace(svc.settings, coarse_k=2)  # the failed build would have changed the levels
    with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
        svc.build()
    assert (records.current(), records.topics(level=None), records.memberships(1), records.weeks()) == before
    with levels_store.engine.connect() as conn:
        levels: dict[int, int] = dict(
            conn.execute(select(topics.c.level, func.count()).group_by(topics.c.level)).all()
        )
    assert levels == {0: 6, 1: 3}
