"""The sections of a digest, each a :class:`~paperfeed.domain.digest.SectionProvider`.

Built here: **trending** (the site's trending list, :class:`~paperfeed.services.feed.FeedService`) and
**categories** (papers new in the subscriber's arXiv categories over the digest's window). Both are
computed once per run and shared by every subscriber, which is what keeps composing 10,000 digests
within seconds. The personal sections ("For you", saved-search alerts, followed authors) adapt the
library and recommendation services (:mod:`paperfeed.services.digest_personal`).
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from paperfeed.domain.digest import PaperTimes, Pick, Section, SectionRequest
from paperfeed.domain.models import Paper
from paperfeed.services.feed import FeedService
from paperfeed.services.visible import VisiblePapers

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


SPAN_DAYS = 8  # one read covers every window ending on a day: a week (+1 for hour alignment)


class CategorySection:
    """Papers new in the subscriber's categories during the digest's window, most upvoted first.

    ``window`` lists the papers published or first listed in ``[since, until)`` with that moment, and
    ``papers`` reads them as shown (hidden ones left out). The papers of the ``SPAN_DAYS`` days before
    the end of a window's last day are read once, indexed by category (best first), and every subscriber
    whose window ends that day is served from that index: a handful of reads for 10,000 digests.
    """

    section = Section.categories

    def __init__(
        self,
        window: PaperTimes,
        papers: VisiblePapers,
        *,
        cache_spans: int = 16,
    ) -> None:
        self.window = window
        self.papers = papers
        self.cache_spans = cache_spans
        self._lock = threading.Lock()
        self._spans: dict[datetime, dict[str, list[tuple[tuple[int, int, str, str], Paper, datetime]]]] = {}

    def title(self, request: SectionRequest) -> str:
        names = request.subscription.preferences.categories
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        return f"New in {shown}" if shown else "New in your categories"

    def _span(self, until: datetime) -> dict[str, list[tuple[tuple[int, int, str, str], Paper, datetime]]]:
        end = datetime.combine(until.astimezone(UTC).date() + timedelta(days=1), datetime.min.time(), UTC)
        with self._lock:
            found = self._spans.get(end)
        if found is not None:
            return found
        times = dict(self.window.paper_times_in_window(end - timedelta(days=SPAN_DAYS), end))
        papers = self.papers.get(list(times))
        index: dict[str, list[tuple[tuple[int, int, str, str], Paper, datetime]]] = {}
        for paper in papers.values():
            item = (_popularity(paper), paper, times[paper.id])
            for category in paper.categories:
                index.setdefault(category, []).append(item)
                group = category.split(".", 1)[0]
                if group != category:  # "cs" also matches every cs.* paper
                    index.setdefault(group, []).append(item)
        for items in index.values():
            items.sort(key=lambda it: it[0], reverse=True)
        with self._lock:
            if len(self._spans) >= self.cache_spans:
                self._spans.clear()
            self._spans[end] = index
        return index

    def picks(self, request: SectionRequest) -> Sequence[Pick]:
        wanted = request.subscription.preferences.categories
        if not wanted:
            return []
        index = self._span(request.until)
        streams = [index.get(category, []) for category in dict.fromkeys(wanted)]
        out: list[Pick] = []
        seen: set[str] = set()
        for _key, paper, when in heapq.merge(*streams, key=lambda it: it[0], reverse=True):
            if not request.since <= when < request.until or paper.id in seen or paper.id in request.exclude:
                continue
            seen.add(paper.id)
            out.append(Pick(paper))
            if len(out) >= request.limit:
                break
        return out
