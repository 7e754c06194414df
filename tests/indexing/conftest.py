"""Papers in a real SQLite store, and helpers to change them the way imports do."""

from __future__ import annotations

from datetime import UTC, datetime

from paperfeed.adapters.store import SqlPaperStore
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from tests.support.papers import paper as make_paper

TOPICS = [
    "graph neural networks for molecules",
    "speech recognition with transformers",
    "dark matter halo simulations",
    "protein folding with diffusion models",
    "reinforcement learning for robot grasping",
]


def paper(i: int, *, abstract: str | None = None, repo: str | None = None, version: int = 1) -> Paper:
    """Paper ``i``; a new text only replaces the stored one with a higher ``version`` (merge rules)."""
    topic = TOPICS[i % len(TOPICS)]
    return make_paper(
        f"2501.{i:05d}",
        f"Paper {i} on {topic}",
        day=datetime(2025, 1, 1 + i % 28, 12, tzinfo=UTC),
        abstract=abstract if abstract is not None else f"We study {topic}. Result number {i}.",
        categories=("cs.LG", "stat.ML") if i % 2 else ("astro-ph.CO",),
        github_repo=repo,
        version=version,
    )


def add_papers(store: SqlPaperStore, papers: list[Paper]) -> None:
    store.apply_batch(Batch(papers=papers))
