"""Topics (issue #17): build them from the stored embeddings, place new papers daily, read them for pages.

``build`` clusters every paper that has a vector of the store's main embedding model, labels the clusters
by c-TF-IDF, keeps the ids of clusters that match an old topic (domain ``match_topics``) and writes the
whole generation in one transaction. ``place`` puts papers embedded since into the topic with the nearest
centroid (cosine), without moving anything else. The daily ``topics`` step places, and rebuilds when the
current build is older than ``rebuild_after`` (or there is none yet and there are enough papers).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING

from paperfeed.domain.embedding import EmbeddingStore
from paperfeed.domain.models import Paper
from paperfeed.domain.topics import (
    Placement,
    RisingTopic,
    TermCounter,
    TooFewPapers,
    Topic,
    TopicAssignment,
    TopicBuild,
    TopicGeneration,
    TopicModeller,
    TopicRecords,
    TopicSettings,
    WeekCount,
    choose_k,
    ctfidf,
    label_of,
    match_topics,
    rising,
    week_of,
    weekly_counts,
)

if TYPE_CHECKING:
    from paperfeed.domain.search import Vectors

__all__ = ["BuildSummary", "PlaceSummary", "TopicPage", "TopicService", "TopicsOverview"]

PapersOf = Callable[[Sequence[str]], dict[str, Paper]]
_READ = 900  # papers per get_papers call


@dataclass(frozen=True, slots=True)
class BuildSummary:
    build: TopicBuild
    without_vector: int  # papers of the store skipped because they have no vector yet
    kept: int  # topics whose id survived from the previous build
    new: int
    removed: int
    seconds: float


@dataclass(frozen=True, slots=True)
class PlaceSummary:
    placed: int
    remaining: int  # papers with a vector still unplaced (more than ``limit`` were waiting)
    seconds: float


@dataclass(frozen=True, slots=True)
class TopicsOverview:
    build: TopicBuild | None
    topics: list[Topic]
    weeks: dict[int, list[WeekCount]]  # the last ``weeks`` weeks of each topic, zeros filled in
    rising: list[RisingTopic]


@dataclass(frozen=True, slots=True)
class TopicPage:
    topic: Topic
    papers: list[Paper]  # ranked like the feed: upvotes, then newest
    weeks: list[WeekCount]  # every week from the first to the last with papers, zeros filled in
    neighbours: list[tuple[Topic, float]]  # nearest topics by centroid cosine


def fill_weeks(series: Sequence[WeekCount], first: date, last: date) -> list[WeekCount]:
    """``series`` on every week from ``first`` to ``last`` (Mondays), missing weeks as zeros."""
    by_week = {w.week: w for w in series}
    out: list[WeekCount] = []
    week = week_of(first)
    while week <= last:
        out.append(by_week.get(week, WeekCount(week, 0, 0)))
        week += timedelta(weeks=1)
    return out


class TopicService:
    def __init__(
        self,
        records: TopicRecords,
        embeddings: EmbeddingStore,
        papers: PapersOf,
        modeller: Callable[[], TopicModeller],
        counter: Callable[[], TermCounter],
        settings: TopicSettings | None = None,
        *,
        rebuild_after: timedelta = timedelta(days=7),
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.records, self.embeddings, self.papers = records, embeddings, papers
        self.modeller, self.counter = modeller, counter
        self.settings = settings or TopicSettings()
        self.rebuild_after, self.clock = rebuild_after, clock

    # -- the job --------------------------------------------------------------------------------------------

    def model_id(self) -> str | None:
        """The embedding model topics are built from: the one most papers have a vector of."""
        counts = self.embeddings.model_counts()
        return max(counts, key=lambda m: (counts[m], m)) if counts else None

    def build(self, report: Callable[[str], None] | None = None) -> BuildSummary:
        """A full rebuild; raises :class:`TooFewPapers` (nothing written) below ``min_papers``."""
        import numpy as np

        started = time.perf_counter()
        say = report or (lambda _m: None)
        s = self.settings
        model = self.model_id()
        ids: list[str] = []
        rows: list[Vectors] = []
        if model is not None:
            for page in self.embeddings.records(model):
                for r in page:
                    ids.append(r.paper_id)
                    rows.append(r.vector)
        without = max(self.embeddings.count_papers() - len(ids), 0)
        if model is None or len(ids) < s.min_papers:
            raise TooFewPapers(len(ids), s.min_papers)
        vectors = np.vstack(rows).astype(np.float32)
        del rows
        k = choose_k(len(ids), s)
        say(f"clustering {len(ids):,} papers into {k} topics ({model})")
        clustering = self.modeller().cluster(vectors, k, seed=s.seed)
        labels = np.asarray(clustering.labels)
        clusters = sorted(set(labels.tolist()) - {-1})
        if not clusters:
            raise TooFewPapers(len(ids), s.min_papers)  # the clustering found no structure at all
        centroids = np.vstack([vectors[labels == c].mean(axis=0) for c in clusters])
        centroids /= np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-12)
        sims = vectors @ centroids.T
        noise = labels == -1
        index = {c: i for i, c in enumerate(clusters)}
        member = np.array([index[c] if c != -1 else -1 for c in labels.tolist()])
        member[noise] = sims[noise].argmax(axis=1)  # HDBSCAN's noise: the nearest topic
        similarity = sims[np.arange(len(ids)), member]

        say("reading titles and abstracts for the labels")
        papers = self._papers(ids)
        groups: list[list[str]] = [[] for _ in clusters]
        for i, pid in enumerate(ids):
            p = papers.get(pid)
            if p is not None:
                groups[member[i]].append(f"{p.title}. {p.abstract}")
        words = [[t for t, _ in top] for top in ctfidf(self.counter().count(groups), s.top_words)]

        members = [frozenset(ids[i] for i in np.flatnonzero(member == j)) for j in range(len(clusters))]
        match = match_topics(
            self.records.memberships(),
            members,
            self.records.next_id(),
            threshold=s.stable_jaccard,
            lineage_share=s.lineage_share,
        )
        coords = np.asarray(clustering.coords, dtype=np.float64).reshape(len(ids), 2)
        topics: list[Topic] = []
        for j, tid in enumerate(match.ids):
            idx = np.flatnonzero(member == j)
            best = idx[np.argsort(-similarity[idx], kind="stable")[: s.representatives]]
            cx, cy = coords[idx].mean(axis=0)
            topics.append(
                Topic(tid, label_of(words[j]), tuple(words[j]), len(idx), tuple(ids[i] for i in best), cx, cy)
            )
        assignments = [
            TopicAssignment(
                pid, match.ids[member[i]], float(similarity[i]), float(coords[i, 0]), float(coords[i, 1])
            )
            for i, pid in enumerate(ids)
        ]
        weeks = weekly_counts(
            (match.ids[member[i]], p.published, p.upvotes)
            for i, pid in enumerate(ids)
            if (p := papers.get(pid)) is not None
        )
        old = set(self.records.memberships())
        generation = TopicGeneration(
            model_id=model,
            method=clustering.method,
            built_at=self.clock(),
            topics=topics,
            centroids={tid: centroids[j] for j, tid in enumerate(match.ids)},
            assignments=assignments,
            lineage=match.lineage,
            weeks=weeks,
            noise=int(noise.sum()),
            next_id=match.next_id,
        )
        build = self.records.replace(generation)
        kept = len(old & set(match.ids))
        return BuildSummary(
            build, without, kept, len(match.ids) - kept, len(old) - kept, time.perf_counter() - started
        )

    def place(self, *, limit: int = 100_000, batch: int = 1000) -> PlaceSummary:
        """Put papers embedded since the build into their nearest topic; raises LookupError without topics."""
        import numpy as np

        started = time.perf_counter()
        build = self.records.current()
        if build is None:
            raise LookupError("no topics yet: run `paperfeed topics build` first")
        centroid_map = self.records.centroids()
        tids = sorted(centroid_map)
        if not tids:
            raise LookupError("no topics yet: run `paperfeed topics build` first")
        matrix = np.vstack([centroid_map[t] for t in tids])
        topics = {t.id: t for t in self.records.topics()}
        placed = 0
        while placed < limit:
            todo = self.records.unplaced(build.model_id, min(batch, limit - placed))
            if not todo:
                break
            vectors = np.vstack([v for _, v in todo])
            sims = vectors @ matrix.T
            best = sims.argmax(axis=1)
            papers = self._papers([pid for pid, _ in todo])
            assignments: list[TopicAssignment] = []
            rows: list[tuple[int, datetime | None, int | None]] = []
            for i, (pid, _) in enumerate(todo):
                tid = tids[int(best[i])]
                t = topics[tid]
                assignments.append(TopicAssignment(pid, tid, float(sims[i, best[i]]), t.x, t.y))
                p = papers.get(pid)
                if p is not None:
                    rows.append((tid, p.published, p.upvotes))
            placed += self.records.place(Placement(assignments, weekly_counts(rows)))
        remaining = self.records.count_unplaced(build.model_id)
        return PlaceSummary(placed, remaining, time.perf_counter() - started)

    def daily(self) -> dict[str, int | float | str]:
        """The pipeline's ``topics`` step: rebuild when due (or first time), else place new papers."""
        build = self.records.current()
        if build is None or self.clock() - build.built_at >= self.rebuild_after:
            try:
                summary = self.build()
            except TooFewPapers as e:
                if build is None:
                    return {"built": 0, "too_few": e.found}
                placed = self.place()  # keep the old topics and place what is new
                return {"built": 0, "placed": placed.placed, "remaining": placed.remaining}
            return {"built": 1, "topics": summary.build.topics, "papers": summary.build.papers}
        placed = self.place()
        return {"built": 0, "placed": placed.placed, "remaining": placed.remaining}

    def _papers(self, ids: Sequence[str]) -> dict[str, Paper]:
        out: dict[str, Paper] = {}
        for start in range(0, len(ids), _READ):
            out.update(self.papers(ids[start : start + _READ]))
        return out

    # -- reads for the pages and the API -------------------------------------------------------------------

    def overview(self, *, weeks: int = 26, today: date | None = None) -> TopicsOverview:
        """Every topic with its last ``weeks`` weeks (for the sparklines) and what is rising this week."""
        build = self.records.current()
        topics = self.records.topics()
        series = self.records.weeks()
        last = week_of(today or self.clock().date())
        first = last - timedelta(weeks=weeks - 1)
        filled = {t.id: fill_weeks(series.get(t.id, []), first, last) for t in topics}
        up = rising(series, self.records.total_weeks(), last)
        return TopicsOverview(build, topics, filled, up)

    def page(
        self, topic_id: int, *, limit: int = 30, offset: int = 0, neighbours: int = 5
    ) -> TopicPage | None:
        topic = self.records.topic(topic_id)
        if topic is None:
            return None
        series = self.records.weeks([topic_id]).get(topic_id, [])
        weeks = fill_weeks(series, series[0].week, series[-1].week) if series else []
        ids = self.records.paper_ids(topic_id, limit=limit, offset=offset)
        found = self.papers(ids)
        return TopicPage(
            topic,
            [found[i] for i in ids if i in found],
            weeks,
            self.neighbours(topic_id, neighbours),
        )

    def neighbours(self, topic_id: int, n: int) -> list[tuple[Topic, float]]:
        import numpy as np

        centroids = self.records.centroids()
        if topic_id not in centroids:
            return []
        others = [t for t in centroids if t != topic_id]
        if not others:
            return []
        sims = np.vstack([centroids[t] for t in others]) @ centroids[topic_id]
        order = np.argsort(-sims, kind="stable")[:n]
        found = {t.id: t for t in self.records.topics()}
        return [(found[others[i]], float(sims[i])) for i in order if others[i] in found]

    def successor(self, topic_id: int) -> int | None:
        return self.records.successor(topic_id)

    def topic_of(self, paper_id: str) -> Topic | None:
        return self.records.topic_of(paper_id)
