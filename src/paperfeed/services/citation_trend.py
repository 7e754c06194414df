"""Trending by citations, the opt-in ``sort=cited`` of ``/trending`` and ``/api/daily_papers``: papers
ranked by :func:`~paperfeed.domain.citation_trend.citation_velocity` (see that module for the formula).

The reference day is today (UTC): citation counts are as of the last harvest, whatever the newest
listing. The ranked list is cached for ``cache_seconds`` (one query ranks every cited paper).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from paperfeed.domain.citation_trend import (
    CitedItem,
    CitedPage,
    CitedParams,
    CitedQueries,
    citation_velocity,
    months_between,
)

__all__ = ["CitedTrending"]


def _today() -> date:
    return datetime.now(UTC).date()


@dataclass
class CitedTrending:
    queries: CitedQueries
    params: CitedParams = field(default_factory=CitedParams)
    today: Callable[[], date] = _today
    cache_seconds: float = 60.0
    _cache: tuple[float, date, list[CitedItem]] | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    @property
    def formula(self) -> str:
        return self.params.formula()

    def page(self, limit: int = 30, offset: int = 0) -> CitedPage:
        """The papers cited most quickly now, best first; ``limit`` ≥ 1, ``offset`` ≥ 0."""
        if limit < 1 or offset < 0:
            raise ValueError(f"limit must be ≥ 1 and offset ≥ 0, not {limit} and {offset}")
        as_of = self.today()
        ranked = self._ranked(as_of)
        return CitedPage(
            items=tuple(ranked[offset : offset + limit]),
            total=len(ranked),
            offset=offset,
            limit=limit,
            as_of=as_of,
            formula=self.formula,
        )

    def forget(self) -> None:
        """Rank afresh next time (a harvest's job has ended: the page cache renders its pages anew)."""
        with self._lock:
            self._cache = None

    def _ranked(self, as_of: date) -> list[CitedItem]:
        stamp = time.monotonic()
        with self._lock:
            hit = self._cache
        if hit is not None and hit[1] == as_of and stamp - hit[0] < self.cache_seconds:
            return hit[2]
        scored = []
        for cand in self.queries.cited_candidates(as_of):
            published = cand.paper.published.date() if cand.paper.published else None
            velocity = citation_velocity(cand.citations_last_12_months, published, as_of, self.params)
            scored.append((velocity, cand, months_between(published, as_of)))
        scored.sort(key=lambda s: (-s[0], -s[1].citations, s[1].paper.id))
        items = [
            CitedItem(
                rank=i + 1,
                paper=cand.paper,
                velocity=velocity,
                citations=cand.citations,
                citations_last_12_months=cand.citations_last_12_months,
                months=months,
            )
            for i, (velocity, cand, months) in enumerate(scored)
        ]
        with self._lock:
            self._cache = (stamp, as_of, items)
        return items
