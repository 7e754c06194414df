"""An alert is a saved search within a window: its matches published between two days.

"For you" boosts a reader's alert matches of the recent window, and a digest's Alerts section mails the
matches of the digest's window. Both ask this one service (the rule was written twice in the composition
root before issue #32).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, datetime

from paperfeed.domain.library import SavedSearch
from paperfeed.domain.models import Paper
from paperfeed.domain.results import PaperSearch
from paperfeed.domain.search import SearchFilters

__all__ = ["AlertSearch", "with_window"]


def with_window(filters: SearchFilters, first: date, last: date) -> SearchFilters:
    """A saved search's own filters restricted to ``[first, last]`` (for matching alerts in the window)."""
    start = max(first, filters.date_from) if filters.date_from else first
    end = min(last, filters.date_to) if filters.date_to else last
    return replace(filters, date_from=start, date_to=end)


@dataclass(frozen=True)
class AlertSearch:
    """:class:`~paperfeed.domain.recommend.WindowMatches` over the instance's search."""

    search: PaperSearch

    def within(self, saved: SavedSearch, first: date, last: date, k: int) -> list[Paper]:
        """The best ``k`` matches of ``saved`` published within ``[first, last]``, as shown."""
        page = self.search.search(saved.query, with_window(saved.filters, first, last), limit=k)
        return [hit.paper for hit in page.hits]

    def between(self, query: str, since: datetime, until: datetime, k: int) -> list[Paper]:
        """The best ``k`` matches of ``query`` published in ``[since, until)`` (a reading group's week)."""
        window = SearchFilters(date_from=since.date(), date_to=until.date())
        page = self.search.search(query, window, limit=k)
        return [h.paper for h in page.hits if h.paper.published and since <= h.paper.published < until]
