"""Topics (issue #17): build them from the stored embeddings, place new papers daily, read them for pages.

``build`` clusters every paper that has a vector of the store's main embedding model, labels the clusters
by c-TF-IDF, keeps the ids of clusters that match an old topic (domain ``match_topics``) and writes the
whole generation in one transaction. ``place`` puts papers embedded since into the topic with the nearest
centroid (cosine), without moving anything else. The daily ``topics`` step places, and rebuilds when the
current build is older than ``rebuild_after`` (or there is none yet and there are enough papers).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from paperfeed.domain.embedding import EmbeddingStore
from paperfeed.domain.models import Paper
from paperfeed.domain.now import SiteClock, SiteNow
from paperfeed.domain.ports import PaperLookup
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
    choose_coarse_k,
    choose_k,
    ctfidf,
    label_of,
    match_topics,
    rising,
    week_of,
    weekly_counts,
)
from paperfeed.domain.wording import count

if TYPE_CHECKING:
    import numpy.typing as npt

    from paperfeed.domain.search import Vectors

    Array = npt.NDArray[Any]

__all__ = ["BuildSummary", "PlaceSummary", "TopicPage", "TopicService", "TopicsOverview"]

_READ = 900  # papers per get_papers call
_BLOCK = 8192  # rows per papers-by-topics product


def _sums(vectors: Array, member: Array, k: int) -> Array:
    """Per cluster, the sum of its rows (``-1`` rows left out): one sparse one-hot product, no copy."""
    import numpy as np
    from scipy.sparse import csr_matrix  # type: ignore[import-untyped]

    rows = np.flatnonzero(member >= 0)
    onehot = csr_matrix((np.ones(len(rows), dtype=np.float32), (member[rows], rows)), shape=(k, len(vectors)))
    sums: Array = np.asarray(onehot @ vectors, dtype=np.float64)
    return sums


def _label_rows(member: Array, k: int, sample: int, seed: int) -> Array:
    """Which rows' words the labels count: about ``sample`` rows, each topic in proportion to its size (at
    least 5 of it, or all), drawn at random (seeded). c-TF-IDF's top words need term shares, not every
    paper: at a million papers the 1-2-gram counts of every abstract would take many GB and most of the
    build (docs/topics.md, "Build time, memory and the daily placement")."""
    import numpy as np

    n = len(member)
    if n <= sample:
        return np.ones(n, dtype=bool)
    sizes = np.bincount(member, minlength=k)
    quota = np.minimum(sizes, np.maximum(5, np.round(sizes * sample / n).astype(np.int64)))
    order = np.lexsort((np.random.default_rng(seed).random(n), member))  # by topic, random within it
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    rank = np.arange(n) - starts[member[order]]
    keep = np.zeros(n, dtype=bool)
    keep[order[rank < quota[member[order]]]] = True
    return keep


def _normalised(sums: Array) -> Array:
    import numpy as np

    norms = np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    out: Array = (sums / norms).astype(np.float32)
    return out


def _rowwise(vectors: Array, centroids: Array, member: Array) -> Array:
    """Each row's cosine to its own centroid (blocks: never the whole papers-by-topics matrix)."""
    import numpy as np

    out = np.empty(len(vectors), dtype=np.float32)
    for start in range(0, len(vectors), _BLOCK):
        block = vectors[start : start + _BLOCK]
        out[start : start + len(block)] = np.einsum(
            "ij,ij->i", block, centroids[member[start : start + _BLOCK]]
        )
    return out


def _nearest(vectors: Array, centroids: Array) -> Array:
    import numpy as np

    out = np.empty(len(vectors), dtype=np.int64)
    for start in range(0, len(vectors), _BLOCK):
        out[start : start + _BLOCK] = (vectors[start : start + _BLOCK] @ centroids.T).argmax(axis=1)
    return out


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
    weeks: dict[int, list[WeekCount]]  # the last ``weeks`` weeks up to "now" of each topic, zeros filled in
    rising: list[RisingTopic]
    now: SiteNow  # the site's "now" the weeks end at (domain/now.py)


@dataclass(frozen=True, slots=True)
class TopicPage:
    topic: Topic
    papers: list[Paper]  # ranked like the feed: upvotes, then newest
    weeks: list[WeekCount]  # every week from its first with papers to "now" (or its last), zeros filled in
    neighbours: list[tuple[Topic, float]]  # nearest topics by centroid cosine
    now: SiteNow


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
        papers: PaperLookup,
        modeller: Callable[[], TopicModeller],
        counter: Callable[[], TermCounter],
        settings: TopicSettings,
        *,
        rebuild_after: timedelta,
        rebuild_growth: float | None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        site: SiteClock | None = None,
    ) -> None:
        """``clock`` stamps builds; ``site`` gives the site's "now" the pages' weeks end at (the feed
        service: the clock, or the newest paper's time for an archive); without it, the clock."""
        self.records, self.embeddings, self.papers = records, embeddings, papers
        self.modeller, self.counter = modeller, counter
        self.settings = settings
        self.rebuild_after, self.clock = rebuild_after, clock
        # rebuild (rather than place) once this many times the build's papers have a vector of its model:
        # placing 10,000 imported papers into topics found among 300 would keep the 300's topics
        self.rebuild_growth = rebuild_growth
        self.site = site

    def now(self) -> SiteNow:
        """The site's "now" (see :mod:`paperfeed.domain.now`)."""
        if self.site is not None:
            return self.site.now()
        clock = self.clock()
        return SiteNow(clock, clock, None)

    # -- the job --------------------------------------------------------------------------------------------

    def model_id(self) -> str | None:
        """The embedding model topics are built from: the one most papers have a vector of."""
        counts = self.embeddings.model_counts()
        return max(counts, key=lambda m: (counts[m], m)) if counts else None

    def build(self, report: Callable[[str], None] | None = None) -> BuildSummary:
        """A full rebuild at both levels; raises :class:`TooFewPapers` (nothing written) below ``min_papers``.

        Memory stays about one copy of the vectors: they are read into one preallocated array, and every
        papers-by-topics product is taken in blocks.
        """
        import numpy as np

        started = time.perf_counter()
        say = report or (lambda _m: None)
        s = self.settings
        model = self.model_id()
        ids: list[str] = []
        vectors = np.zeros((0, 0), dtype=np.float32)
        if model is not None:
            vectors = self._read_vectors(model, ids)
        without = max(self.embeddings.count_papers() - len(ids), 0)
        if model is None or len(ids) < s.min_papers:
            raise TooFewPapers(len(ids), s.min_papers)
        k = choose_k(len(ids), s)
        say(f"clustering {count(len(ids), 'paper')} into {count(k, 'topic')} ({model})")
        modeller = self.modeller()
        clustering = modeller.cluster(vectors, k, seed=s.seed)
        labels = np.asarray(clustering.labels)
        clusters = sorted(set(labels.tolist()) - {-1})
        if not clusters:
            raise TooFewPapers(len(ids), s.min_papers)  # the clustering found no structure at all
        index = np.full(max(clusters) + 2, -1)
        index[np.asarray(clusters)] = np.arange(len(clusters))
        member = index[labels]  # -1 (noise) stays -1 through the last slot
        sums = _sums(vectors, member, len(clusters))
        centroids = _normalised(sums)
        noise = member == -1
        if noise.any():  # HDBSCAN's noise: the nearest topic
            member[noise] = _nearest(vectors[noise], centroids)
            sums = _sums(vectors, member, len(clusters))
        similarity = _rowwise(vectors, centroids, member)
        sizes = np.bincount(member, minlength=len(clusters))

        kc = choose_coarse_k(len(clusters), s)
        say(f"grouping {count(len(clusters), 'topic')} into {kc} coarse topics")
        parent = np.asarray(modeller.coarsen(centroids, sizes.tolist(), kc, seed=s.seed))
        coarse = sorted(set(parent.tolist()))
        parent = np.searchsorted(np.asarray(coarse), parent)  # 0..len(coarse)-1, in order
        coarse_sums = np.zeros((len(coarse), vectors.shape[1]), dtype=np.float64)
        np.add.at(coarse_sums, parent, sums)
        coarse_centroids = _normalised(coarse_sums)
        up = parent[member]  # each paper's coarse topic
        coarse_similarity = _rowwise(vectors, coarse_centroids, up)

        say(f"laying out {count(len(ids), 'paper')} in 2-D")
        xy = np.asarray(
            modeller.layout(
                vectors, member.tolist(), seed=s.seed, sample=s.layout_sample, neighbours=s.layout_neighbours
            ),
            dtype=np.float64,
        ).reshape(len(ids), 2)

        say("reading titles and abstracts for the labels")
        counted = _label_rows(member, len(clusters), s.label_sample, s.seed)
        groups: list[list[str]] = [[] for _ in clusters]
        dated: list[tuple[int, datetime | None, int | None]] = []  # (row, published, upvotes)
        for start in range(0, len(ids), _READ):
            chunk = ids[start : start + _READ]
            found = self.papers.get_papers(chunk)
            for i, pid in enumerate(chunk, start):
                p = found.get(pid)
                if p is not None:
                    if counted[i]:
                        groups[member[i]].append(f"{p.title}. {p.abstract}")
                    dated.append((i, p.published, p.upvotes))
        say(f"counting the words of {count(sum(len(g) for g in groups), 'paper')}")
        counts = self.counter().count(groups)
        del groups
        words = [[t for t, _ in top] for top in ctfidf(counts, s.top_words)]
        coarse_counts: list[Counter[str]] = [Counter() for _ in coarse]
        for j, fine_counts in enumerate(counts):
            coarse_counts[parent[j]].update(fine_counts)
        coarse_words = [[t for t, _ in top] for top in ctfidf(coarse_counts, s.top_words)]

        say("matching the topics with the previous build's")
        order = np.argsort(member, kind="stable")
        bounds = np.searchsorted(member[order], np.arange(len(clusters) + 1))
        rows_of = [order[bounds[j] : bounds[j + 1]] for j in range(len(clusters))]
        members = [frozenset(ids[i] for i in rows) for rows in rows_of]
        match = match_topics(
            self.records.memberships(),
            members,
            self.records.next_id(),
            threshold=s.stable_jaccard,
            lineage_share=s.lineage_share,
        )
        coarse_rows = [np.flatnonzero(up == c) for c in range(len(coarse))]
        coarse_match = match_topics(
            self.records.memberships(level=1),
            [frozenset(ids[i] for i in rows) for rows in coarse_rows],
            match.next_id,
            threshold=s.stable_jaccard,
            lineage_share=s.lineage_share,
        )

        def topic(tid: int, idx: Any, sim: Any, words_of: list[str], level: int, parent: int | None) -> Topic:
            """One topic of either level: rows `idx` are its papers, the best by `sim` represent it."""
            best = idx[np.argsort(-sim[idx], kind="stable")[: s.representatives]]
            cx, cy = xy[idx].mean(axis=0)
            return Topic(
                tid,
                label_of(words_of),
                tuple(words_of),
                len(idx),
                tuple(ids[i] for i in best),
                float(cx),
                float(cy),
                level=level,
                parent_id=parent,
            )

        topics = [
            topic(tid, rows_of[j], similarity, words[j], 0, coarse_match.ids[parent[j]])
            for j, tid in enumerate(match.ids)
        ]
        topics += [
            topic(tid, coarse_rows[c], coarse_similarity, coarse_words[c], 1, None)
            for c, tid in enumerate(coarse_match.ids)
        ]
        assignments = [
            TopicAssignment(pid, match.ids[member[i]], float(similarity[i]), float(xy[i, 0]), float(xy[i, 1]))
            for i, pid in enumerate(ids)
        ]
        weeks = weekly_counts((match.ids[member[i]], day, votes) for i, day, votes in dated)
        weeks |= weekly_counts((coarse_match.ids[up[i]], day, votes) for i, day, votes in dated)
        old = set(self.records.memberships())
        generation = TopicGeneration(
            model_id=model,
            method=clustering.method,
            built_at=self.clock(),
            topics=topics,
            centroids={tid: centroids[j] for j, tid in enumerate(match.ids)}
            | {tid: coarse_centroids[c] for c, tid in enumerate(coarse_match.ids)},
            assignments=assignments,
            lineage=match.lineage + coarse_match.lineage,
            weeks=weeks,
            noise=int(noise.sum()),
            next_id=coarse_match.next_id,
        )
        # the fine topics are the build's "topics" (what the summary and every page count); the coarse ones
        # group them: said apart, so this line and "built N topics" after it give the same N
        fine, coarse_n = len(match.ids), len(coarse_match.ids)
        say(
            f"writing {count(fine, 'topic')} in {count(coarse_n, 'coarse topic')} and "
            f"{count(len(assignments), 'assignment')}"
        )
        build = self.records.replace(generation)
        kept = len(old & set(match.ids))
        return BuildSummary(
            build, without, kept, len(match.ids) - kept, len(old) - kept, time.perf_counter() - started
        )

    def _read_vectors(self, model: str, ids: list[str]) -> Vectors:
        """Every ``model`` vector into one array (grown by doubling if the count moved), ``ids`` filled."""
        import numpy as np

        out = np.zeros((0, 0), dtype=np.float32)
        n = 0
        for page in self.embeddings.records(model):
            for r in page:
                if out.shape[0] == 0:
                    out = np.empty(
                        (max(self.embeddings.model_counts().get(model, 0), 1), len(r.vector)), np.float32
                    )
                if n == out.shape[0]:
                    out = np.concatenate([out, np.empty_like(out)])
                out[n] = r.vector
                ids.append(r.paper_id)
                n += 1
        return out[:n]

    def place(self, *, limit: int = 100_000, batch: int = 1000) -> PlaceSummary:
        """Put papers embedded since the build into their nearest topic; raises LookupError without topics.

        A placed paper also gets a map place: among up to ``anchors_per_topic`` papers of its topic spread
        over its similarity ranks, the similarity-weighted mean of its nearest ones (the build's rule for
        papers outside the layout's sample). Its coarse topic's size and weeks grow with it.
        """
        import numpy as np

        started = time.perf_counter()
        s = self.settings
        build = self.records.current()
        if build is None:
            raise LookupError("no topics yet: run `paperfeed topics build` first")
        centroid_map = self.records.centroids()
        tids = sorted(centroid_map)
        if not tids:
            raise LookupError("no topics yet: run `paperfeed topics build` first")
        matrix = np.vstack([centroid_map[t] for t in tids])
        topics = {t.id: t for t in self.records.topics(level=None)}
        modeller = self.modeller()
        placed = 0
        while placed < limit:
            todo = self.records.unplaced(build.model_id, min(batch, limit - placed))
            if not todo:
                break
            vectors = np.vstack([v for _, v in todo])
            sims = vectors @ matrix.T
            best = sims.argmax(axis=1)
            chosen = [tids[int(b)] for b in best]
            xy = np.asarray([(topics[t].x, topics[t].y) for t in chosen], dtype=np.float64)
            anchors = self.records.anchors(build.model_id, sorted(set(chosen)), s.anchors_per_topic)
            for tid, (near, places) in anchors.items():
                rows = [i for i, t in enumerate(chosen) if t == tid]
                xy[rows] = modeller.place(
                    np.vstack(near), np.asarray(places), vectors[rows], neighbours=s.layout_neighbours
                )
            papers = self._papers([pid for pid, _ in todo])
            assignments: list[TopicAssignment] = []
            rows_: list[tuple[int, datetime | None, int | None]] = []
            parents: Counter[int] = Counter()
            for i, (pid, _) in enumerate(todo):
                tid = chosen[i]
                parent = topics[tid].parent_id
                assignments.append(
                    TopicAssignment(pid, tid, float(sims[i, best[i]]), float(xy[i, 0]), float(xy[i, 1]))
                )
                if parent is not None:
                    parents[parent] += 1
                p = papers.get(pid)
                if p is not None:
                    rows_.append((tid, p.published, p.upvotes))
                    if parent is not None:
                        rows_.append((parent, p.published, p.upvotes))
            placed += self.records.place(Placement(assignments, weekly_counts(rows_), dict(parents)))
        remaining = self.records.count_unplaced(build.model_id)
        return PlaceSummary(placed, remaining, time.perf_counter() - started)

    def daily(self, report: Callable[[str], None] | None = None) -> dict[str, int | float | str]:
        """The ``topics`` step (the daily pipeline, and ``paperfeed run``'s indexer once it has embedded
        what arrived): rebuild when due -- none yet, the build :attr:`rebuild_after` old, or the papers
        with vectors grown :attr:`rebuild_growth`-fold since -- else place the new papers."""
        build = self.records.current()
        if build is None or self._rebuild_due(build):
            try:
                summary = self.build(report)
            except TooFewPapers as e:
                if build is None:
                    return {"built": 0, "too_few": e.found}
                placed = self.place()  # keep the old topics and place what is new
                return {"built": 0, "placed": placed.placed, "remaining": placed.remaining}
            return {"built": 1, "topics": summary.build.topics, "papers": summary.build.papers}
        placed = self.place()
        return {"built": 0, "placed": placed.placed, "remaining": placed.remaining}

    def _rebuild_due(self, build: TopicBuild) -> bool:
        if self.clock() - build.built_at >= self.rebuild_after:
            return True
        if self.rebuild_growth is None:
            return False
        embedded = self.embeddings.model_counts().get(build.model_id, 0)
        return embedded >= self.rebuild_growth * max(1, build.papers)

    def _papers(self, ids: Sequence[str]) -> dict[str, Paper]:
        out: dict[str, Paper] = {}
        for start in range(0, len(ids), _READ):
            out.update(self.papers.get_papers(ids[start : start + _READ]))
        return out

    # -- reads for the pages and the API -------------------------------------------------------------------

    def overview(
        self, *, weeks: int = 26, today: date | None = None, level: int | None = 0
    ) -> TopicsOverview:
        """The topics of ``level`` (0 fine, 1 coarse, ``None`` both) with their last ``weeks`` weeks (for
        the sparklines), and what is rising this week among them (among the fine ones for ``None``)."""
        build = self.records.current()
        topics = self.records.topics(level)
        series = self.records.weeks()
        now = self.now()
        last = week_of(today or now.today)
        first = last - timedelta(weeks=weeks - 1)
        filled = {t.id: fill_weeks(series.get(t.id, []), first, last) for t in topics}
        among = {t.id for t in topics if t.level == (0 if level is None else level)}
        up = rising({t: w for t, w in series.items() if t in among}, self.records.total_weeks(), last)
        return TopicsOverview(build, topics, filled, up, now)

    def page(
        self, topic_id: int, *, limit: int = 30, offset: int = 0, neighbours: int = 5
    ) -> TopicPage | None:
        topic = self.records.topic(topic_id)
        if topic is None:
            return None
        series = self.records.weeks([topic_id]).get(topic_id, [])
        now = self.now()
        weeks = fill_weeks(series, series[0].week, max(series[-1].week, week_of(now.today))) if series else []
        ids = self.records.paper_ids(topic_id, limit=limit, offset=offset)
        found = self.papers.get_papers(ids)
        return TopicPage(
            topic,
            [found[i] for i in ids if i in found],
            weeks,
            self.neighbours(topic_id, neighbours, level=topic.level),
            now,
        )

    def neighbours(self, topic_id: int, n: int, *, level: int = 0) -> list[tuple[Topic, float]]:
        """The ``n`` topics of ``level`` nearest ``topic_id`` by centroid cosine."""
        import numpy as np

        centroids = self.records.centroids(level)
        if topic_id not in centroids:
            return []
        others = [t for t in centroids if t != topic_id]
        if not others:
            return []
        sims = np.vstack([centroids[t] for t in others]) @ centroids[topic_id]
        order = np.argsort(-sims, kind="stable")[:n]
        found = {t.id: t for t in self.records.topics(level)}
        return [(found[others[i]], float(sims[i])) for i in order if others[i] in found]

    def successor(self, topic_id: int) -> int | None:
        return self.records.successor(topic_id)

    def paper_ids(self, topic_id: int, *, limit: int) -> list[str]:
        """The topic's visible papers, ranked as its page ranks them."""
        return self.records.paper_ids(topic_id, limit=limit)

    def topics(self, level: int | None = 0) -> list[Topic]:
        """The topics of ``level`` (0 fine, 1 coarse, ``None`` both) of the current build."""
        return self.records.topics(level)

    def current_build(self) -> TopicBuild | None:
        return self.records.current()

    def unplaced(self, build: TopicBuild) -> int:
        """Papers with a vector of the build's model not placed into a topic yet (/admin/jobs)."""
        return self.records.count_unplaced(build.model_id)

    def topic_of(self, paper_id: str) -> Topic | None:
        return self.records.topic_of(paper_id)
