"""Papers with vectors in three clear groups, stored for real (SQLite, then PostgreSQL).

The vectors are synthetic on purpose: these tests are about the job, the store and the pages, not about
clustering quality (bench/topic_quality.py measures that on real embeddings). Each group has its own
direction plus a little noise and its own words, so k-means finds the groups and c-TF-IDF names them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.embeddings import SqlEmbeddingStore
from paperfeed.adapters.store.topics import SqlTopicRecords
from paperfeed.adapters.topic_model import SklearnTermCounter
from paperfeed.bootstrap.catalogue import topic_settings
from paperfeed.domain.embedding import PendingPaper
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper, content_hash
from paperfeed.services.topics import TopicService
from tests.support.defaults import DEFAULTS, topic_modeller
from tests.support.papers import paper as make_paper

MODEL = "test-model"
DIM = 16
GROUPS = {
    "graph": "graph neural networks message passing",
    "protein": "protein folding structure prediction",
    "galaxy": "galaxy cluster dark matter survey",
}
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)  # a Thursday


def paper(pid: str, group: str, published: datetime, upvotes: int | None = None) -> Paper:
    return make_paper(
        pid,
        f"{GROUPS[group].split()[0].title()} study {pid}",
        day=published,
        updated=True,
        source=pid,
        abstract=f"We study {GROUPS[group]} in depth.",
        authors=("Ada Lovelace",),
        categories=("cs.LG",),
        upvotes=upvotes,
    )


def group_of(paper_id: str) -> str:
    """The group of a paper made here: ``<prefix>:<group>-<n>`` (a source-prefixed paper id)."""
    return paper_id.split(":")[1].split("-")[0]


def vector_of(group: str, rng: np.random.Generator) -> np.ndarray:
    base = np.zeros(DIM, dtype=np.float32)
    base[list(GROUPS).index(group)] = 1.0
    v = base + rng.normal(0, 0.05, DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def add_papers(
    store: SqlPaperStore,
    per_group: int,
    *,
    prefix: str = "pp",
    groups: Sequence[str] = tuple(GROUPS),
    embed: bool = True,
    seed: int = 0,
    vector_group: dict[str, str] | None = None,
) -> list[Paper]:
    """``per_group`` papers of each group, one a day back from NOW; their vectors saved if ``embed``."""
    rng = np.random.default_rng(seed)
    made: list[Paper] = []
    for g in groups:
        for i in range(per_group):
            made.append(paper(f"{prefix}:{g}-{i:04d}", g, NOW - timedelta(days=i % 70), upvotes=i % 5))
    store.apply_batch(Batch(papers=made))
    if embed:
        save_vectors(store, made, rng, vector_group)
    return made


def save_vectors(
    store: SqlPaperStore,
    made: Sequence[Paper],
    rng: np.random.Generator,
    vector_group: dict[str, str] | None = None,
) -> None:
    pending = [
        PendingPaper(p.id, p.title, p.abstract, content_hash(p.title, p.abstract), False) for p in made
    ]
    vectors = np.vstack(
        [vector_of((vector_group or {}).get(group_of(p.id), group_of(p.id)), rng) for p in made]
    )
    SqlEmbeddingStore(store.engine).save_vectors(MODEL, pending, vectors)


def service(store: SqlPaperStore, **settings: int) -> TopicService:
    s = {"min_papers": 30, "papers_per_topic": 40, "min_k": 2, "max_k": 50} | settings
    rebuild_after = timedelta(days=DEFAULTS.topics_rebuild_days)
    return TopicService(
        SqlTopicRecords(store.engine),
        SqlEmbeddingStore(store.engine),
        store,
        topic_modeller,
        SklearnTermCounter,
        replace(topic_settings(DEFAULTS), **s),
        rebuild_after=rebuild_after,
        rebuild_growth=DEFAULTS.topics_rebuild_growth,
        clock=lambda: NOW,
    )


@pytest.fixture
def topics_store(store: SqlPaperStore) -> SqlPaperStore:
    add_papers(store, 40)  # 120 papers, k = 120 / 40 = 3
    return store
