"""A controlled set of weeks for "Rising this week": three topics of papers with synthetic vectors.

Each of the three groups (graph, protein, galaxy) gets ``per_week`` papers in each of the 8 weeks before
``week`` and in ``week`` itself (published Monday to Wednesday); with ``burst`` the galaxy group gets
``burst`` more papers in ``week``. The vectors point along one axis per group (plus a little noise), so
k-means with k = 3 finds exactly the groups, and the numbers are known by hand: with the defaults
(4 a week, a burst of 12) galaxy has 16 of the week's 24 papers against 32 of the previous 96, a smoothed
lift of (17/27) / (33/99) = 1.89 ("1.9× its usual share"), and nothing else rises.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import numpy as np

from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.embeddings import SqlEmbeddingStore
from paperfeed.domain.embedding import PendingPaper
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Listing, Paper, content_hash
from tests.topics.conftest import GROUPS, paper  # the three groups of the topic tests, one paper maker

__all__ = ["GROUPS", "MODEL", "add_rising_world", "expected_lift"]

MODEL = "rising-test-model"
DIM = 16


def expected_lift(per_week: int = 4, burst: int = 12) -> float:
    """The smoothed lift of the galaxy topic in ``add_rising_world`` (T = 3 topics, 8 weeks before)."""
    n_now, c_now = 3 * per_week + burst, per_week + burst
    n_before, c_before = 3 * per_week * 8, per_week * 8
    return ((c_now + 1) / (n_now + 3)) / ((c_before + 1) / (n_before + 3))


def add_rising_world(
    store: SqlPaperStore,
    week: date,
    *,
    per_week: int = 4,
    burst: int = 12,
    listed_on: date | None = None,
    prefix: str = "rz",
) -> list[Paper]:
    """Store the papers (and their vectors under ``MODEL``); list the week's papers on ``listed_on``."""
    assert week.weekday() == 0, "week is a Monday"
    made: list[Paper] = []
    for back in range(8, -1, -1):
        monday = week - timedelta(weeks=back)
        for group in GROUPS:
            count = per_week + (burst if back == 0 and group == "galaxy" else 0)
            for i in range(count):
                day = monday + timedelta(days=i % 3)
                published = datetime.combine(day, time(12), UTC)
                made.append(paper(f"{prefix}:{group}-w{back}-{i:02d}", group, published))
    listings = []
    if listed_on is not None:
        this_week = [p for p in made if "-w0-" in p.id]
        listings = [Listing(listed_on, p.id, "hf-daily", 1, rank=r) for r, p in enumerate(this_week[:6])]
    store.apply_batch(Batch(papers=made, listings=listings))
    rng = np.random.default_rng(7)
    vectors = []
    for p in made:
        v = np.zeros(DIM, dtype=np.float32)
        v[list(GROUPS).index(p.id.split(":")[1].split("-")[0])] = 1.0
        v += rng.normal(0, 0.05, DIM).astype(np.float32)
        vectors.append(v / np.linalg.norm(v))
    pending = [
        PendingPaper(p.id, p.title, p.abstract, content_hash(p.title, p.abstract), False) for p in made
    ]
    SqlEmbeddingStore(store.engine).save_vectors(MODEL, pending, np.vstack(vectors))
    return made
