"""The sections of a digest, each a :class:`~paperfeed.domain.digest.SectionProvider`.

Built here: **trending** (the site's trending list, :class:`~paperfeed.services.feed.FeedService`) and
**categories** (papers new in the subscriber's arXiv categories over the digest's window). Both are
computed once per run and shared by every subscriber, which is what keeps composing 10,000 digests
within seconds. The personal sections ("For you", saved-search alerts, followed authors) adapt the
library and recommendation services (:mod:`paperfeed.services.digest_personal`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from paperfeed.domain.digest import Pick, Section, SectionRequest
from paperfeed.domain.models import Paper
from paperfeed.services.feed import FeedService

__all__ = ["CategorySection", "TrendingSection"]


class TrendingSection:
    """The site's trending papers, best first (the same ranking as the trending page)."""

    section = Section.trending

    def __init__(self, feeds: FeedService, pool: int = 200) -> None:
        self.feeds = feeds
        self.pool = pool
        self._lock = threading.Lock()
        self._cache: tuple[float, list[Pick]] | None = None

    def title(self, request: SectionRequest) -> str:
        return "Trending"

    def _ranked(self) -> list[Pick]:
        import time

        with self._lock:
            if self._cache is not None and time.monotonic() - self._cache[0] < 300:
                return self._cache[1]
            page = self.feeds.trending(limit=self.pool)
            picks = [Pick(item.paper) for item in page.items]
            self._cache = (time.monotonic(), picks)
            return picks

    def picks(self, request: SectionRequest) -> Sequence[Pick]:
        out: list[Pick] = []
        for pick in self._ranked():
            if pick.paper.id not in request.exclude:
                out.append(pick)
                if len(out) >= request.limit:
                    break
        return out


def _popularity(paper: Paper) -> tuple[int, int, str, str]:
    stamp = paper.published.isoformat() if paper.published else ""
    return (paper.upvotes or 0, paper.github_stars or 0, stamp, paper.id)


class CategorySection:
    """Papers new in the subscriber's categories during the digest's window, most upvoted first.

    ``window_ids(since, until)`` lists the papers published or first listed in the window and
    ``load(ids)`` fetches them; each window is read once and indexed by category for every subscriber.
    """

    section = Section.categories

    def __init__(
        self,
        window_ids: Callable[[datetime, datetime], list[str]],
        load: Callable[[Sequence[str]], Mapping[str, Paper]],
        *,
        cache_windows: int = 64,
    ) -> None:
        self.window_ids = window_ids
        self.load = load
        self.cache_windows = cache_windows
        self._lock = threading.Lock()
        self._by_window: dict[tuple[datetime, datetime], dict[str, list[Paper]]] = {}

    def title(self, request: SectionRequest) -> str:
        names = request.subscription.preferences.categories
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        return f"New in {shown}" if shown else "New in your categories"

    def _index(self, since: datetime, until: datetime) -> dict[str, list[Paper]]:
        key = (since, until)
        with self._lock:
            found = self._by_window.get(key)
        if found is not None:
            return found
        papers = self.load(self.window_ids(since, until))
        index: dict[str, list[Paper]] = {}
        for paper in sorted(papers.values(), key=_popularity, reverse=True):
            for category in paper.categories:
                index.setdefault(category, []).append(paper)
                group = category.split(".", 1)[0]
                if group != category:  # "cs" also matches every cs.* paper
                    index.setdefault(group, []).append(paper)
        with self._lock:
            if len(self._by_window) >= self.cache_windows:
                self._by_window.clear()
            self._by_window[key] = index
        return index

    def picks(self, request: SectionRequest) -> Sequence[Pick]:
        wanted = request.subscription.preferences.categories
        if not wanted:
            return []
        index = self._index(request.since, request.until)
        merged: dict[str, tuple[Paper, str]] = {}
        for category in wanted:
            for paper in index.get(category, ()):
                if paper.id not in request.exclude and paper.id not in merged:
                    merged[paper.id] = (paper, category)
        ranked = sorted(merged.values(), key=lambda pc: _popularity(pc[0]), reverse=True)
        return [Pick(paper) for paper, _category in ranked[: request.limit]]
