"""The "For you" feed: recent papers ranked for one reader (or one of their tags), each with its reasons.

    recs: RecommendationService = app.readers.recommendations
    for rec in recs.for_you(user_id, limit=20):             # list[Recommendation]
        rec.paper.title, rec.score, rec.reason               # "similar to 'X' you saved · by Y (followed)"
    page = recs.feed(user_id, limit=20, tag="Diffusion")     # ForYou: items + mode + cold-start message
    recs.for_you(user_id, limit=10, exclude=shown_in_digests)  # never repeat what a digest already showed

How one request goes (see :mod:`paperfeed.domain.recommend` for the model itself):

1. The reader's signals: saved papers (+ upvoted ones) are positives; saved, dismissed, upvoted and the
   caller's ``exclude`` ids are never recommended.
2. The window: the ``window_days`` days up to the site's "now" (domain/now.py: today, or the newest paper
   once the data stops more than a week earlier).
3. With positives: a classifier (or, under ``min_positives``, similarity to the saved papers) is trained on
   the positives against dismissed papers plus random papers of the window. It is cached per reader, tag
   and signal/data version, so a reload costs one index query. The vector index returns the best ``pool``
   papers of the window along the model's direction; they are re-scored exactly.
4. Papers by followed authors and matches of saved searches (alerts) in the window join the candidates with
   a boost; with no positives at all, they and then trending papers make the feed.
5. Topics the reader picked (a cold start, docs/topics.md): while there is no trained model (no or too few
   saved papers), the window's papers of those topics join with a boost, the topics interleaved, each
   topic's papers by upvotes, then nearest to its centroid (``rank_candidates``).
6. Every item says why: the nearest saved paper, the followed author, the alert, the picked topic
   ("from your topic: <label>"), or "trending".
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Literal

import numpy as np

from paperfeed.domain.embedding import EmbeddingStore
from paperfeed.domain.library import ReaderSignals
from paperfeed.domain.now import site_now
from paperfeed.domain.recommend import (
    MailedPapers,
    ModelParams,
    ReaderModel,
    Reason,
    Recommendation,
    RecommendQueries,
    SignalsSource,
    TrendingPapers,
    Upvotes,
    WindowMatches,
    fit_reader_model,
    nearest,
    sample_ids,
)
from paperfeed.domain.search import EmbedderSource, SearchFilters, VectorIndexError, Vectors, VectorSource
from paperfeed.domain.topic_picks import PickedTopicSource, rank_candidates
from paperfeed.services.visible import VisiblePapers

__all__ = [
    "ForYou",
    "Mode",
    "RecommendSettings",
    "RecommendationService",
    "UnknownTag",
]

Mode = Literal["model", "similarity", "topics", "trending"]


class UnknownTag(LookupError):
    """The reader has no saved paper under that tag name."""


@dataclass(frozen=True, slots=True)
class RecommendSettings:
    """Tuning of the feed; the model's own choices are in :class:`ModelParams`."""

    window_days: int  # "recent": published within this many days of the reference time (a setting)
    params: ModelParams = field(default_factory=ModelParams)
    pool: int = 300  # papers taken from the vector index before exact re-scoring
    author_boost: float = 2.0  # added to the score (in standard deviations) of a followed author's paper
    alert_boost: float = 1.5  # added for a match of one of the reader's saved searches
    alert_hits: int = 20  # matches taken per saved search
    topic_boost: float = 1.0  # the most a picked topic's paper gains (its topic's first; later ones less)
    max_dismissed: int = 1000  # newest "not interested" papers used as negatives
    cache_size: int = 256  # trained reader models kept
    window_cache_seconds: float = 60.0


@dataclass(frozen=True, slots=True)
class ForYou:
    """One "For you" page: the items, how they were ranked, and what to tell a reader who is starting."""

    items: tuple[Recommendation, ...]
    mode: Mode
    positives: int  # saved/upvoted papers (of the tag) that have a vector
    unindexed: int  # saved/upvoted papers without a vector yet (not embedded)
    tag: str | None
    tags: tuple[str, ...]  # the reader's tags, for a per-tag selector
    window: tuple[date, date]  # first and last day of "recent"
    min_positives: int
    topics: tuple[str, ...] = ()  # the labels of the topics the reader picked

    @property
    def message(self) -> str | None:
        """Cold-start guidance for the page (None once the reader has a model of their own)."""
        if self.mode == "model":
            return None
        if self.mode == "similarity":
            more = self.min_positives - self.positives
            picked = " and papers from the topics you picked" if self.topics else ""
            return (
                f"Ranked by similarity to the {self.positives} paper{'s' if self.positives != 1 else ''} "
                f"you saved{picked}. Save {more} more to get a model trained on your taste."
            )
        if self.mode == "topics":
            return (
                f"Recent papers from the {len(self.topics)} topic{'s' if len(self.topics) != 1 else ''} "
                "you picked. Save papers you like and this feed learns what you read."
            )
        if self.unindexed:
            return (
                f"The {self.unindexed} paper{'s' if self.unindexed != 1 else ''} you saved "
                f"{'are' if self.unindexed != 1 else 'is'} not indexed yet (the background indexer embeds "
                "new papers); until then this feed shows trending papers."
            )
        return (
            "Save papers you like (or follow authors, or save a search) and this feed learns what you "
            "read. Until then it shows trending papers."
        )


@dataclass
class RecommendationService:
    """Per-reader ranking of recent papers; thread-safe. See the module docstring."""

    signals: SignalsSource
    papers: VisiblePapers  # hidden papers are never recommended; items carry the shown counts
    embeddings: EmbeddingStore
    queries: RecommendQueries
    vectors: VectorSource
    embedder: EmbedderSource  # its model names the vector space (read without loading the model)
    trending: TrendingPapers
    settings: RecommendSettings
    alerts: WindowMatches | None = None
    upvotes: Upvotes | None = None  # community upvotes, once they exist
    mailed: MailedPapers | None = None  # papers the reader's digests already carried
    topics: PickedTopicSource | None = None  # the topics the reader picked (cold start)
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    _models: OrderedDict[tuple[object, ...], ReaderModel] = field(default_factory=OrderedDict, init=False)
    _window: dict[tuple[object, ...], tuple[float, list[tuple[str, tuple[str, ...]]]]] = field(
        default_factory=dict, init=False
    )
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    # -- public -------------------------------------------------------------------------------------------

    def for_you(
        self, user_id: int, *, limit: int = 20, tag: str | None = None, exclude: Collection[str] = frozenset()
    ) -> list[Recommendation]:
        """The reader's best ``limit`` recent papers, never one already saved, dismissed or in ``exclude``."""
        return list(self.feed(user_id, limit=limit, tag=tag, exclude=exclude).items)

    def feed(
        self, user_id: int, *, limit: int = 20, tag: str | None = None, exclude: Collection[str] = frozenset()
    ) -> ForYou:
        """:meth:`for_you` with how it was ranked (for pages). Raises :class:`UnknownTag`, ``ValueError``."""
        if not 1 <= limit <= 200:
            raise ValueError(f"limit must be between 1 and 200, got {limit}")
        signals = self.signals.signals(user_id)
        upvoted = tuple(self.upvotes.upvoted_ids(user_id)) if self.upvotes is not None else ()
        if tag is not None:
            positive_ids = signals.in_tag(tag)
            if not positive_ids:
                raise UnknownTag(f"you have no papers saved under the tag {tag!r}")
            tag = next(t for t in signals.tags if t.casefold() == tag.casefold())
        else:
            positive_ids = tuple(dict.fromkeys((*(s.paper_id for s in signals.saved), *upvoted)))
        excluded = signals.excluded_ids | frozenset(upvoted) | frozenset(exclude)
        hidden = self.papers.hidden()
        excluded |= hidden
        if self.mailed is not None:
            excluded |= frozenset(self.mailed.papers_mailed_to(user_id))
        model_id = self.embedder.current().model_id
        version = self.queries.version(model_id)
        first, last, since, until = self._bounds()
        recent = self._recent(model_id, since, until, version)

        positives = self.embeddings.vectors(model_id, positive_ids)
        pos_ids = [p for p in positive_ids if p in positives]
        scores: dict[str, float] = {}
        nearest_of: dict[str, str] = {}
        mode: Mode = "trending"
        model: ReaderModel | None = None
        if pos_ids:
            model = self._model(user_id, tag, signals, pos_ids, positives, recent, model_id, version, until)
            mode = "model" if model.kind == "model" else "similarity"
            scores, nearest_of = self._score(model, pos_ids, recent, excluded, model_id, first, last)

        boosts: dict[str, float] = {}
        why: dict[str, list[Reason]] = {}
        picked: tuple[str, ...] = ()
        if tag is None:
            self._boost_authors(signals, recent, excluded, boosts, why)
            self._boost_alerts(signals, excluded, first, last, boosts, why)
            picked = self._boost_topics(user_id, mode, excluded, since, until, limit, boosts, why)
            if mode == "trending" and any(r.kind == "topic" for rs in why.values() for r in rs):
                mode = "topics"
            extra = [p for p in boosts if p not in scores]
            if (
                extra and model is not None
            ):  # papers found only by author or alert: score them with the model too
                more, closest = self._score_ids(model, pos_ids, extra, model_id)
                scores.update(more)
                nearest_of.update(closest)

        total = {p: scores.get(p, 0.0) + boosts.get(p, 0.0) for p in set(scores) | set(boosts)}
        ranked = sorted(total, key=lambda p: (-total[p], p))[:limit]
        titles = self.papers.get([*ranked, *{nearest_of.get(p, "") for p in ranked} - {""}])
        upvoted_set = frozenset(upvoted)
        items: list[Recommendation] = []
        for paper_id in ranked:
            paper = titles.get(paper_id)
            if paper is None:
                continue
            reasons = list(why.get(paper_id, ()))
            near = nearest_of.get(paper_id)
            if near is not None:
                saved = titles.get(near)
                verb = "upvoted" if near in upvoted_set and near not in signals.saved_ids else "saved"
                title = saved.title if saved else near
                reasons.append(Reason("similar", f"similar to “{title}” you {verb}", near, title))
            items.append(Recommendation(paper, round(total[paper_id], 4), tuple(reasons)))
        if len(items) < limit:
            items.extend(self._trending(limit - len(items), excluded | {r.paper.id for r in items}))
        return ForYou(
            items=tuple(items),
            mode=mode,
            positives=len(pos_ids),
            unindexed=len(positive_ids) - len(pos_ids),
            tag=tag,
            tags=signals.tags,
            window=(first, last),
            min_positives=self.settings.params.min_positives,
            topics=picked,
        )

    # -- steps --------------------------------------------------------------------------------------------

    def _bounds(self) -> tuple[date, date, datetime, datetime]:
        """First and last day of the window and its ``[since, until)`` instants."""
        last = site_now(self.clock(), self.queries.latest_published()).today  # the site's rule
        first = last - timedelta(days=self.settings.window_days - 1)
        since = datetime.combine(first, datetime.min.time(), UTC)
        return first, last, since, since + timedelta(days=self.settings.window_days)

    def _recent(
        self, model_id: str, since: datetime, until: datetime, version: str
    ) -> list[tuple[str, tuple[str, ...]]]:
        key = (model_id, since, until, version)
        stamp = time.monotonic()
        with self._lock:
            hit = self._window.get(key)
            if hit is not None and stamp - hit[0] < self.settings.window_cache_seconds:
                return hit[1]
        found = self.queries.recent(model_id, since, until)
        with self._lock:
            self._window = {key: (stamp, found)}  # one window at a time: every reader shares it
        return found

    def _model(
        self,
        user_id: int,
        tag: str | None,
        signals: ReaderSignals,
        pos_ids: Sequence[str],
        positives: dict[str, Vectors],
        recent: Sequence[tuple[str, tuple[str, ...]]],
        model_id: str,
        version: str,
        until: datetime,
    ) -> ReaderModel:
        params = self.settings.params
        dismissed = sorted(signals.dismissed)[: self.settings.max_dismissed]
        fingerprint = hashlib.blake2b(
            "\n".join([*pos_ids, "|", *dismissed]).encode(), digest_size=12
        ).hexdigest()
        key = (user_id, tag, fingerprint, model_id, version, until, params)
        with self._lock:
            cached = self._models.get(key)
            if cached is not None:
                self._models.move_to_end(key)
                return cached
        keep_out = frozenset(pos_ids) | signals.dismissed
        random_ids = sample_ids(
            [paper_id for paper_id, _ in recent], params.negatives, f"{user_id}|{fingerprint}", keep_out
        )
        found = self.embeddings.vectors(model_id, [*random_ids, *dismissed])
        random_ids = [p for p in random_ids if p in found]
        dim = len(next(iter(positives.values())))
        model = fit_reader_model(
            np.vstack([positives[p] for p in pos_ids]),
            random_ids,
            _stack([found[p] for p in random_ids], dim),
            params,
            dismissed=_stack([found[p] for p in dismissed if p in found], dim),
        )
        with self._lock:
            self._models[key] = model
            while len(self._models) > self.settings.cache_size:
                self._models.popitem(last=False)
        return model

    def _score(
        self,
        model: ReaderModel,
        pos_ids: Sequence[str],
        recent: Sequence[tuple[str, tuple[str, ...]]],
        excluded: frozenset[str],
        model_id: str,
        first: date,
        last: date,
    ) -> tuple[dict[str, float], dict[str, str]]:
        """Exact scores of the best ``pool`` recent papers along the model, and each one's nearest saved."""
        index = self.vectors.current()
        pool: list[str] | None = None
        if index is not None:
            try:
                filters = SearchFilters(date_from=first, date_to=last)
                directions = model.directions
                k = max(self.settings.pool // len(directions), 20)
                found: dict[str, None] = {}
                for direction in directions:
                    for hit in index.search(direction, k, filters, exclude=excluded):
                        found[hit.paper_id] = None
                pool = list(found)
            except VectorIndexError:
                pool = None  # a broken index: score the window from the stored vectors instead
        if pool is None:
            pool = [p for p, _ in recent if p not in excluded]
        return self._score_ids(model, pos_ids, pool, model_id)

    def _score_ids(
        self, model: ReaderModel, pos_ids: Sequence[str], ids: Sequence[str], model_id: str
    ) -> tuple[dict[str, float], dict[str, str]]:
        found = self.embeddings.vectors(model_id, ids)
        have = [p for p in ids if p in found]
        if not have:
            return {}, {}
        matrix = np.vstack([found[p] for p in have])
        scores = model.score(have, matrix)
        best, _ = nearest(model.positives, matrix)
        return (
            {p: float(s) for p, s in zip(have, scores, strict=True)},
            {p: pos_ids[int(b)] for p, b in zip(have, best, strict=True)},
        )

    def _boost_authors(
        self,
        signals: ReaderSignals,
        recent: Sequence[tuple[str, tuple[str, ...]]],
        excluded: frozenset[str],
        boosts: dict[str, float],
        why: dict[str, list[Reason]],
    ) -> None:
        keys = {_author_key(name): name for name in signals.followed_authors}
        keys.pop("", None)
        if not keys:
            return
        for paper_id, authors in recent:
            if paper_id in excluded:
                continue
            names = [keys[a] for a in authors if a in keys]
            if names:
                boosts[paper_id] = boosts.get(paper_id, 0.0) + self.settings.author_boost
                who = ", ".join(dict.fromkeys(names))
                plural = "authors" if len(set(names)) > 1 else "an author"
                why.setdefault(paper_id, []).append(Reason("author", f"by {plural} you follow: {who}"))

    def _boost_alerts(
        self,
        signals: ReaderSignals,
        excluded: frozenset[str],
        first: date,
        last: date,
        boosts: dict[str, float],
        why: dict[str, list[Reason]],
    ) -> None:
        if self.alerts is None:
            return
        for search in signals.saved_searches:
            for paper_id in (p.id for p in self.alerts.within(search, first, last, self.settings.alert_hits)):
                if paper_id in excluded:
                    continue
                reasons = why.setdefault(paper_id, [])
                if any(r.kind == "alert" for r in reasons):
                    continue  # one alert boost per paper, however many alerts it matches
                boosts[paper_id] = boosts.get(paper_id, 0.0) + self.settings.alert_boost
                reasons.append(Reason("alert", f"matches your alert “{search.name}”"))

    def _boost_topics(
        self,
        user_id: int,
        mode: Mode,
        excluded: frozenset[str],
        since: datetime,
        until: datetime,
        limit: int,
        boosts: dict[str, float],
        why: dict[str, list[Reason]],
    ) -> tuple[str, ...]:
        """Papers of the reader's picked topics, while there is no model; returns the picked labels."""
        if self.topics is None:
            return ()
        picked = self.topics.picked(user_id)
        if not picked or mode == "model":
            return tuple(p.topic.label for p in picked)
        labels = {p.topic.id: p.topic.label for p in picked}
        found = self.topics.candidates(list(labels), since, until, limit + 50)
        ranked = rank_candidates([c for c in found if c.paper_id not in excluded], limit)
        for i, c in enumerate(ranked):
            reasons = why.setdefault(c.paper_id, [])
            if any(r.kind == "topic" for r in reasons):
                continue
            boosts[c.paper_id] = boosts.get(c.paper_id, 0.0) + self.settings.topic_boost * (
                1.0 - i / max(len(ranked), 1)
            )
            label = labels[c.topic_id]
            reasons.append(Reason("topic", f"from your topic: {label}", topic_id=c.topic_id))
        return tuple(labels.values())

    def _trending(self, count: int, excluded: Collection[str]) -> list[Recommendation]:
        out: list[Recommendation] = []
        for paper in self.trending.trending_papers(min(count + len(excluded), 1000)):
            if paper.id in excluded:
                continue
            out.append(Recommendation(paper, 0.0, (Reason("trending", "trending"),)))
            if len(out) == count:
                break
        return out


def _stack(rows: Sequence[Vectors], dim: int) -> Vectors:
    return np.vstack(rows).astype(np.float32) if rows else np.zeros((0, dim), np.float32)


def _author_key(name: str) -> str:
    from paperfeed.domain.library import InvalidLibraryInput, author_key

    try:
        return author_key(name)
    except InvalidLibraryInput:
        return ""
