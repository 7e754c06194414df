"""Topics (issue #17): clusters of the papers' embeddings, their labels, stable ids and what is rising.

Everything here is pure: the clustering itself and the word counting are ports (:class:`TopicModeller`,
:class:`TermCounter`) the adapters implement with scikit-learn; the store of topics is
:class:`TopicRecords`. What lives here are the rules a reader can check by hand:

* **Labels** by class-based TF-IDF (c-TF-IDF, as BERTopic): all the texts of a topic are one document,
  and a term weighs ``tf(t, c) · log(1 + A / f(t))`` where ``tf(t, c)`` is its count in topic ``c``, ``f(t)``
  its count over all topics and ``A`` the average number of terms per topic. Frequent in this topic and
  rare elsewhere wins. The singular and plural of a word count as one term (:func:`merge_inflections`),
  written as the text writes it most often: a label says "models, language", not "models, language,
  model".
* **Stable ids** across rebuilds: a new cluster keeps the id of the old topic whose members overlap it
  with Jaccard ``|old ∩ new| / |old ∪ new| ≥ 0.5`` (at most one such old topic per new cluster when the
  threshold is above one half; pairs are taken greedily, best first, one-to-one). Other clusters get ids
  never used before. Every (old, new) pair where the new cluster took at least ``lineage_share`` of the
  old topic's papers is recorded as lineage: an old id that did not survive is *merged* when its
  successor also took a large share of another old topic, *split* when its papers went to several new
  topics, otherwise *replaced*. A removed id redirects to the successor that took most of its papers.
* **Two levels**: the fine topics (level 0) are grouped into coarse topics (level 1) by clustering the
  fine centroids weighted by their sizes; a fine topic names its coarse topic in ``parent_id``. Coarse
  topics are labelled by c-TF-IDF over their papers (the fine topics' term counts summed) and keep their
  ids across rebuilds by the same Jaccard rule over their papers; ids are shared by both levels.
* **Rising**: see :func:`rising`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # numpy only for types: the CLI's --help imports the domain and not numpy
    from .search import Vectors

__all__ = [
    "Clustering",
    "LineageKind",
    "Placement",
    "RisingTopic",
    "TermCounter",
    "TooFewPapers",
    "Topic",
    "TopicAssignment",
    "TopicBuild",
    "TopicGeneration",
    "TopicLineage",
    "TopicMatch",
    "TopicModeller",
    "TopicRecords",
    "TopicSettings",
    "WeekCount",
    "choose_coarse_k",
    "choose_k",
    "ctfidf",
    "jaccard",
    "label_of",
    "match_topics",
    "merge_inflections",
    "rising",
    "week_of",
]


class TooFewPapers(ValueError):
    """A build was asked for with fewer embedded papers than topics can be made from."""

    def __init__(self, found: int, needed: int) -> None:
        self.found, self.needed = found, needed
        super().__init__(
            f"too few papers for topics: {found:,} with an embedding, at least {needed:,} needed "
            "(import and index more papers, or lower PAPERFEED_TOPICS_MIN_PAPERS)"
        )


FINE_PER_COARSE = 4  # measured on arxiv_cats_4k: AMI with the categories and NPMI (docs/topics.md)


@dataclass(frozen=True, slots=True)
class TopicSettings:
    """How topics are built; the defaults are the measured choice of ``bench/topic_quality.py``. The first
    five are ``PAPERFEED_TOPICS_*`` settings, whose one default is in ``settings_model.py``."""

    min_papers: int  # below this a build refuses: clusters of a handful of papers say nothing
    papers_per_topic: int  # k = n / papers_per_topic when ``k`` is not fixed, clipped to [min_k, max_k]
    k: int | None  # a fixed k (None: from papers_per_topic)
    coarse_k: int | None  # a fixed coarse k (None: from fine_per_coarse)
    layout_sample: int  # the 2-D layout is fitted on at most this many papers; the rest are placed at
    # their layout_neighbours nearest fitted neighbours (of the same fine topic)
    min_k: int = 8
    max_k: int = 1000  # a cap: at 1M papers k = n / 150 would be ~6,700 (docs/topics.md, "Scale")
    fine_per_coarse: int = FINE_PER_COARSE  # coarse k = fine k / fine_per_coarse ...
    max_coarse_k: int = 60  # ... clipped to [2, max_coarse_k]
    layout_neighbours: int = 10
    label_sample: int = 100_000  # the labels' words are counted on at most about this many papers,
    # drawn at random within each topic in proportion to its size (at least 5 of each, or all of it)
    anchors_per_topic: int = 64  # the daily placement's neighbours: this many papers of the topic
    top_words: int = 10
    representatives: int = 5
    stable_jaccard: float = 0.5
    lineage_share: float = 0.3
    seed: int = 0


def choose_coarse_k(fine: int, settings: TopicSettings) -> int:
    """The number of coarse topics over ``fine`` fine topics: fixed, or one per ``fine_per_coarse``."""
    if settings.coarse_k is not None:
        k = settings.coarse_k
    else:
        k = min(round(fine / settings.fine_per_coarse), settings.max_coarse_k)
    return max(1, min(max(k, 2), fine))  # at least two groups where there are two fine topics


def choose_k(papers: int, settings: TopicSettings) -> int:
    """The number of topics for ``papers`` papers: fixed, or one per ``papers_per_topic`` within bounds."""
    if settings.k is not None:
        return max(2, min(settings.k, papers // 2))
    k = round(papers / settings.papers_per_topic)
    return max(2, min(max(settings.min_k, min(k, settings.max_k)), papers // 2))


@dataclass(frozen=True, slots=True)
class Topic:
    """One topic of the current generation. ``x``/``y`` are its centre on the 2-D layout.

    ``level`` 0 is a fine topic (papers are assigned to these), 1 a coarse topic grouping fine ones; a
    fine topic's ``parent_id`` is its coarse topic (``None`` for a coarse topic, or a build before levels).
    """

    id: int
    label: str
    words: tuple[str, ...]
    size: int
    representatives: tuple[str, ...]  # paper ids closest to the centroid, best first
    x: float = 0.0
    y: float = 0.0
    level: int = 0
    parent_id: int | None = None


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """A paper's topic: ``similarity`` is the cosine to the topic's centroid; ``x``/``y`` its map place."""

    paper_id: str
    topic_id: int
    similarity: float
    x: float = 0.0
    y: float = 0.0


@dataclass(frozen=True, slots=True)
class WeekCount:
    """Papers of a topic published in the week starting (Monday) ``week``, and their upvotes."""

    week: date
    papers: int
    upvotes: int = 0


class LineageKind(StrEnum):
    KEPT = "kept"  # the id survived; a lineage row says another new topic took part of its papers
    MERGED = "merged"
    SPLIT = "split"
    REPLACED = "replaced"


@dataclass(frozen=True, slots=True)
class TopicLineage:
    old_id: int
    new_id: int
    share: float  # the share of the old topic's papers that went to the new one
    kind: LineageKind


@dataclass(frozen=True, slots=True)
class Clustering:
    """What :meth:`TopicModeller.cluster` returns: a cluster per row (``-1``: noise)."""

    labels: Sequence[int]
    method: str  # a description of the algorithm and its settings, kept with the build


@dataclass(frozen=True, slots=True)
class TopicBuild:
    """The record of one build (a *generation*)."""

    generation: int
    built_at: datetime
    model_id: str
    method: str
    papers: int
    topics: int  # fine topics
    noise: int
    coarse: int = 0  # coarse topics


@dataclass(slots=True)
class TopicGeneration:
    """A whole new set of topics, written by :meth:`TopicRecords.replace` in one transaction.

    ``topics`` holds both levels (fine with their ``parent_id``, coarse with ``level`` 1); ``centroids``
    and ``weeks`` are keyed by the ids of both; ``assignments`` put papers into fine topics.
    """

    model_id: str
    method: str
    built_at: datetime
    topics: list[Topic]
    centroids: dict[int, Vectors]
    assignments: list[TopicAssignment]
    lineage: list[TopicLineage]
    weeks: dict[int, list[WeekCount]]
    noise: int = 0
    next_id: int = 1


@dataclass(frozen=True, slots=True)
class Placement:
    """The daily placement of new papers into existing topics (``paperfeed topics place``)."""

    assignments: list[TopicAssignment]
    weeks: dict[int, list[WeekCount]] = field(default_factory=dict)  # increments (both levels)
    sizes: dict[int, int] = field(default_factory=dict)  # size increments beyond the assignments' (coarse)


@dataclass(frozen=True, slots=True)
class RisingTopic:
    topic_id: int
    papers: int  # this week
    share: float  # this week's share of all papers
    before: float  # the share over the previous weeks
    score: float  # log lift, smoothed: see :func:`rising`


# -- ports --------------------------------------------------------------------------------------------------


class TopicModeller(Protocol):
    """Clusters L2-normalised embeddings into ``k`` topics (or as many as it finds), lays them out in 2-D."""

    def cluster(self, vectors: Vectors, k: int, *, seed: int) -> Clustering: ...

    def coarsen(self, centroids: Vectors, sizes: Sequence[int], k: int, *, seed: int) -> list[int]:
        """A coarse cluster (0..k-1) for each fine centroid, the centroids weighted by ``sizes``."""
        ...

    def layout(
        self, vectors: Vectors, groups: Sequence[int], *, seed: int, sample: int, neighbours: int
    ) -> Vectors:
        """An ``n x 2`` map of the papers: fitted on at most ``sample`` of them (stratified by ``groups``,
        the fine topics), the others placed like :meth:`place` among the fitted papers of their group."""
        ...

    def place(self, anchors: Vectors, anchor_xy: Vectors, vectors: Vectors, *, neighbours: int) -> Vectors:
        """``vectors``' places (``n x 2``) at the similarity-weighted mean of their nearest anchors'."""
        ...


class TermCounter(Protocol):
    """Term counts per group of texts (tokenised, stop words dropped; unigrams and bigrams), a word's
    singular and plural counted as one term (:func:`merge_inflections`)."""

    def count(self, groups: Sequence[Sequence[str]]) -> list[Counter[str]]: ...


class TopicRecords(Protocol):
    """The topics of the current generation, their papers, weekly counts and the lineage of old ids."""

    def current(self) -> TopicBuild | None: ...

    def topics(self, level: int | None = 0) -> list[Topic]:
        """The topics of one level (0 fine, 1 coarse; ``None``: both), biggest first."""
        ...

    def topic(self, topic_id: int) -> Topic | None: ...

    def successor(self, topic_id: int) -> int | None:
        """The live topic an id that no longer exists became (following merges/splits), if any."""
        ...

    def memberships(self, level: int = 0) -> dict[int, frozenset[str]]:
        """Every current topic's paper ids at ``level`` (for matching a rebuild to it)."""
        ...

    def centroids(self, level: int = 0) -> dict[int, Vectors]: ...

    def anchors(
        self, model_id: str, topic_ids: Sequence[int], per_topic: int
    ) -> dict[int, tuple[list[Vectors], list[tuple[float, float]]]]:
        """Up to about ``per_topic`` placed papers of each topic, spread over its similarity ranks, with
        their vectors and map places: the neighbours a new paper is placed among."""
        ...

    def next_id(self) -> int:
        """The smallest topic id never used."""
        ...

    def replace(self, generation: TopicGeneration) -> TopicBuild:
        """Make ``generation`` current in one transaction (a killed build leaves the old one served)."""
        ...

    def place(self, placement: Placement) -> int:
        """Add assignments (and weekly increments) to the current generation in one transaction."""
        ...

    def unplaced(self, model_id: str, limit: int) -> list[tuple[str, Vectors]]:
        """Papers with a ``model_id`` vector and no topic yet, up to ``limit``, with their vectors."""
        ...

    def count_unplaced(self, model_id: str) -> int: ...

    def topic_of(self, paper_id: str) -> Topic | None: ...

    def paper_ids(self, topic_id: int, *, limit: int, offset: int = 0) -> list[str]:
        """The topic's papers ranked like the feed: upvotes, then newest first."""
        ...

    def weeks(
        self, topic_ids: Sequence[int] | None = None, *, since: date | None = None, until: date | None = None
    ) -> dict[int, list[WeekCount]]:
        """Weekly counts per topic; ``since``/``until`` (inclusive Mondays) bound the weeks read."""
        ...

    def total_weeks(self, *, since: date | None = None, until: date | None = None) -> list[WeekCount]:
        """All assigned papers per week (the denominator of a topic's share), optionally within bounds."""
        ...


# -- c-TF-IDF labels ---------------------------------------------------------------------------------------


def ctfidf(counts: Sequence[Mapping[str, int]], top: int) -> list[list[tuple[str, float]]]:
    """The ``top`` terms of each topic by c-TF-IDF (see the module docstring), best first."""
    totals: Counter[str] = Counter()
    for c in counts:
        totals.update(c)
    if not counts:
        return []
    average = sum(totals.values()) / len(counts)
    out: list[list[tuple[str, float]]] = []
    for c in counts:
        scored = [(t, n * math.log(1 + average / totals[t])) for t, n in c.items() if n > 0]
        scored.sort(key=lambda s: (-s[1], s[0]))
        out.append(scored[:top])
    return out


def merge_inflections(
    counts: Sequence[Mapping[str, int]], singular: Callable[[str], str | None]
) -> list[Counter[str]]:
    """``counts`` with the inflections of a word merged: each word of a term stands for its singular
    (``singular(word)``, None when the word is no plural) where that singular occurs too, and is written
    as the form the texts use most, the same in every group and every term (so a label's check that a
    word is already shown still works across unigrams and bigrams). A plural whose singular never occurs
    stays as it is: a rule's wrong guess (``bias`` → ``bia``) then merges nothing.
    """
    words: Counter[str] = Counter()
    for group in counts:
        for term, n in group.items():
            for word in term.split():
                words[word] += n
    key: dict[str, str] = {}
    for word in words:
        single = singular(word)
        key[word] = single if single and single != word and single in words else word
    by_key: dict[str, list[str]] = {}
    for word in sorted(words):
        by_key.setdefault(key[word], []).append(word)
    # the most used form of each key; a tie goes to the shorter, then the first alphabetically
    shown = {k: min(forms, key=lambda f: (-words[f], len(f), f)) for k, forms in by_key.items()}
    out: list[Counter[str]] = []
    for group in counts:
        merged: Counter[str] = Counter()
        for term, n in group.items():
            merged[" ".join(shown[key[w]] for w in term.split())] += n
        out.append(merged)
    return out


def label_of(words: Sequence[str], n: int = 3) -> str:
    """A short label: the first ``n`` top terms, skipping one whose words an earlier term already shows."""
    chosen: list[str] = []
    shown: set[str] = set()
    for term in words:
        parts = set(term.split())
        if parts <= shown:
            continue
        chosen.append(term)
        shown |= parts
        if len(chosen) == n:
            break
    return ", ".join(chosen) if chosen else "(no words)"


# -- stable ids ---------------------------------------------------------------------------------------------


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


@dataclass(frozen=True, slots=True)
class TopicMatch:
    ids: list[int]  # the id of each new cluster, in the order they were given
    lineage: list[TopicLineage]
    next_id: int


def match_topics(
    old: Mapping[int, frozenset[str]],
    new: Sequence[frozenset[str]],
    next_id: int,
    *,
    threshold: float = 0.5,
    lineage_share: float = 0.3,
) -> TopicMatch:
    """Ids for the ``new`` clusters given the ``old`` topics' members (see the module docstring)."""
    owner: dict[str, int] = {p: tid for tid, members in old.items() for p in members}
    overlaps: list[Counter[int]] = []  # per new cluster: old id -> shared papers
    for members in new:
        overlaps.append(Counter(owner[p] for p in members if p in owner))
    pairs = sorted(
        (
            (shared / (len(old[o]) + len(new[j]) - shared), j, o)
            for j, c in enumerate(overlaps)
            for o, shared in c.items()
        ),
        key=lambda t: (-t[0], t[1], t[2]),
    )
    ids: list[int | None] = [None] * len(new)
    taken: set[int] = set()
    for score, j, o in pairs:
        if score < threshold:
            break
        if ids[j] is None and o not in taken:
            ids[j], taken = o, taken | {o}
    fresh = max(next_id, max(old, default=0) + 1)
    final: list[int] = []
    for i in ids:
        if i is None:
            i, fresh = fresh, fresh + 1
        final.append(i)
    links: list[tuple[int, int, float]] = []  # (old, new id, share of old)
    for j, c in enumerate(overlaps):
        for o, shared in c.items():
            share = shared / len(old[o]) if old[o] else 0.0
            if share >= lineage_share and final[j] != o:
                links.append((o, final[j], share))
    drawn: Counter[int] = Counter(n for _, n, _ in links)  # new id -> old topics it took a large part of
    spread: Counter[int] = Counter(o for o, _, _ in links)
    lineage: list[TopicLineage] = []
    for o, n, share in sorted(links):
        if o in taken:
            kind = LineageKind.KEPT
        elif drawn[n] > 1 or n in taken:
            kind = LineageKind.MERGED
        elif spread[o] > 1:
            kind = LineageKind.SPLIT
        else:
            kind = LineageKind.REPLACED
        lineage.append(TopicLineage(o, n, round(share, 4), kind))
    return TopicMatch(final, lineage, fresh)


# -- weeks and rising ---------------------------------------------------------------------------------------


def week_of(day: date | datetime) -> date:
    """The Monday starting the ISO week of ``day``."""
    d = day.date() if isinstance(day, datetime) else day
    return d - timedelta(days=d.weekday())


def rising(
    weeks: Mapping[int, Sequence[WeekCount]],
    totals: Sequence[WeekCount],
    this_week: date,
    *,
    previous: int = 8,
    min_papers: int = 3,
) -> list[RisingTopic]:
    """Topics whose share of papers grew most this week against their previous ``previous`` weeks.

    With ``c`` a topic's papers this week, ``N`` all papers this week, ``C`` and ``M`` the same pooled over
    the previous weeks and ``T`` the number of topics, the score is the smoothed log lift
    ``log((c + 1) / (N + T)) - log((C + 1) / (M + T))`` (add-one smoothing keeps a topic that had no paper
    before from scoring infinity). Topics with fewer than ``min_papers`` this week are left out; only
    positive scores are returned, highest first.
    """
    start = week_of(this_week)
    window = {start - timedelta(weeks=i) for i in range(1, previous + 1)}
    n_now = sum(w.papers for w in totals if w.week == start)
    n_before = sum(w.papers for w in totals if w.week in window)
    t = max(len(weeks), 1)
    out: list[RisingTopic] = []
    for tid, series in weeks.items():
        c_now = sum(w.papers for w in series if w.week == start)
        c_before = sum(w.papers for w in series if w.week in window)
        if c_now < min_papers:
            continue
        score = math.log((c_now + 1) / (n_now + t)) - math.log((c_before + 1) / (n_before + t))
        if score > 0:
            share = c_now / n_now if n_now else 0.0
            before = c_before / n_before if n_before else 0.0
            out.append(RisingTopic(tid, c_now, share, before, score))
    out.sort(key=lambda r: (-r.score, r.topic_id))
    return out


def weekly_counts(
    rows: Iterable[tuple[int, date | datetime | None, int | None]],
) -> dict[int, list[WeekCount]]:
    """``(topic, published, upvotes)`` rows bucketed into weeks, each topic's weeks in date order."""
    acc: dict[int, dict[date, list[int]]] = {}
    for tid, published, upvotes in rows:
        if published is None:
            continue
        cell = acc.setdefault(tid, {}).setdefault(week_of(published), [0, 0])
        cell[0] += 1
        cell[1] += upvotes or 0
    return {tid: [WeekCount(w, n, u) for w, (n, u) in sorted(cells.items())] for tid, cells in acc.items()}
