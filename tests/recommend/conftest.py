"""A small two-topic world on a real store: papers, fake-embedder vectors, an exact index, the service.

Topic "graphs" and topic "proteins" use disjoint vocabularies, so the fake hashing embedder separates
them; each paper also draws from a shared vocabulary, as real abstracts share words. Papers are spread
over the 20 days before :data:`NOW`, plus a few old ones outside the 30-day window.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from paperfeed.adapters.embed.fake import FakeEmbedder
from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.embeddings import SqlEmbeddingStore
from paperfeed.adapters.store.feed_queries import SqlFeedQueries
from paperfeed.adapters.store.recommend_queries import SqlRecommendQueries
from paperfeed.adapters.vector import ExactVectorIndex
from paperfeed.bootstrap.readers import recommend_settings
from paperfeed.domain.embedding import PendingPaper
from paperfeed.domain.ingest import Batch
from paperfeed.domain.library import DEFAULT_TAG, ReaderSignals, SavedPaper, SavedSearch
from paperfeed.domain.models import Paper
from paperfeed.domain.recommend import ModelParams
from paperfeed.domain.search import SearchFilters
from paperfeed.services.embedders import FixedEmbedder
from paperfeed.services.feed import FeedService
from paperfeed.services.recommend import RecommendationService
from paperfeed.services.vector_reader import FixedVectors
from paperfeed.services.visible import VisiblePapers
from tests.support.defaults import DEFAULTS

NOW = datetime(2026, 6, 30, 12, tzinfo=UTC)
GRAPHS = ["graph", "node", "edge", "message", "passing", "neighbourhood", "spectral", "vertex", "adjacency"]
PROTEINS = ["protein", "folding", "residue", "enzyme", "binding", "amino", "sequence", "structure", "ligand"]
SHARED = ["we", "propose", "method", "results", "show", "improves", "benchmark", "novel", "approach", "data"]
EMBEDDER = FakeEmbedder(64)


def _text(rng: random.Random, words: Sequence[str]) -> str:
    return " ".join(rng.choice(words) for _ in range(12)) + " " + " ".join(rng.sample(SHARED, 4))


def make_papers() -> list[Paper]:
    rng = random.Random(7)
    out = []
    for i in range(80):
        topic = "graphs" if i % 2 == 0 else "proteins"
        words = GRAPHS if topic == "graphs" else PROTEINS
        old = i >= 70  # published 60 days ago: outside the window
        published = NOW - timedelta(days=60 if old else i % 20, hours=i % 5)
        out.append(
            Paper(
                id=f"2606.{i:05d}",
                title=f"{topic} paper {i}: {_text(rng, words)[:40]}",
                abstract=_text(rng, words),
                authors=(f"Author {i % 7}", "Ada Lovelace" if i == 13 else "Grace Hopper"),
                categories=("cs.LG",),
                published=published,
                upvotes=i % 9,
            )
        )
    return out


def topic_of(paper_id: str) -> str:
    return "graphs" if int(paper_id.split(".")[1]) % 2 == 0 else "proteins"


@dataclass
class Library:
    """The library's read model (``ReaderSignals``) for one test's readers, changed by the test."""

    saved: dict[int, list[tuple[str, tuple[str, ...]]]] = field(default_factory=dict)
    dismissed: dict[int, set[str]] = field(default_factory=dict)
    authors: dict[int, tuple[str, ...]] = field(default_factory=dict)
    searches: dict[int, tuple[SavedSearch, ...]] = field(default_factory=dict)

    def save(self, user_id: int, paper_ids: Iterable[str], tags: tuple[str, ...] = (DEFAULT_TAG,)) -> None:
        self.saved.setdefault(user_id, []).extend((p, tags) for p in paper_ids)

    def signals(self, user_id: int) -> ReaderSignals:
        at = datetime(2026, 1, 1, tzinfo=UTC)
        return ReaderSignals(
            user_id=user_id,
            saved=tuple(SavedPaper(p, tags, at) for p, tags in reversed(self.saved.get(user_id, []))),
            dismissed=frozenset(self.dismissed.get(user_id, set())),
            followed_authors=self.authors.get(user_id, ()),
            saved_searches=self.searches.get(user_id, ()),
        )


def saved_search(name: str, query: str) -> SavedSearch:
    return SavedSearch(1, 1, name, query, SearchFilters(), datetime(2026, 1, 1, tzinfo=UTC))


@dataclass
class World:
    store: SqlPaperStore
    embeddings: SqlEmbeddingStore
    index: ExactVectorIndex
    library: Library
    papers: dict[str, Paper]
    alert_calls: list[tuple[str, date, date]] = field(default_factory=list)

    def service(self, *, with_index: bool = True, **settings: object) -> RecommendationService:
        queries = SqlFeedQueries(self.store.engine)
        return RecommendationService(
            signals=self.library,
            papers=VisiblePapers(queries),
            embeddings=self.embeddings,
            queries=SqlRecommendQueries(self.store.engine),
            vectors=FixedVectors(self.index if with_index else None),
            embedder=FixedEmbedder(EMBEDDER),
            trending=FeedService(queries, clock=lambda: NOW),
            alerts=self,
            settings=replace(recommend_settings(DEFAULTS), **settings),  # type: ignore[arg-type]
            clock=lambda: NOW,
        )

    def within(self, saved: SavedSearch, first: date, last: date, k: int) -> list[Paper]:
        """Word match on titles within the window: the alert port, as the search service would answer it."""
        self.alert_calls.append((saved.query, first, last))
        word = saved.query.casefold()
        return sorted(
            (
                p
                for p in self.papers.values()
                if word in p.title.casefold() and p.published and first <= p.published.date() <= last
            ),
            key=lambda p: p.id,
        )[:k]


@pytest.fixture
def world(store: SqlPaperStore, tmp_path: Path) -> World:
    papers = make_papers()
    store.apply_batch(Batch(papers=papers))
    embeddings = SqlEmbeddingStore(store.engine)
    stored = store.get_papers([p.id for p in papers])
    pending = [PendingPaper(p.id, p.title, p.abstract, p.content_hash, False) for p in stored.values()]
    embeddings.save_vectors(EMBEDDER.model_id, pending, EMBEDDER.embed([p.text for p in pending]))
    index = ExactVectorIndex(tmp_path / "vectors", model_id=EMBEDDER.model_id, dimension=EMBEDDER.dimension)
    for records in embeddings.records(EMBEDDER.model_id):
        index.upsert(records)
    return World(store, embeddings, index, Library(), {p.id: p for p in papers})


def small_model(**overrides: object) -> ModelParams:
    """The default model with fewer random negatives (the test world has 70 recent papers)."""
    return ModelParams(negatives=40, **overrides)  # type: ignore[arg-type]
