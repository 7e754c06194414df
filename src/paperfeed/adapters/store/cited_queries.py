"""The store's side of trending by citations (:class:`~paperfeed.domain.citation_trend.CitedQueries`).

One aggregate over ``citations`` by ``citing_day`` (the citing work's date as ``yyyymmdd``, see
``schema_citations``), joined to the papers of the store; hidden papers are left out. Year-only dates
(``yyyy0000``) count when the integer falls in the window, as the store's own 12-month counts do;
unknown dates (``0``) never do. Portable SQLAlchemy Core (SQLite and PostgreSQL).
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.engine import Engine

from paperfeed.domain.citation_trend import CitedCandidate

from .accounts import not_hidden
from .schema import papers
from .schema_citations import citations, works
from .sql_store import _PAPER_COLUMNS, _from_row

__all__ = ["SqlCitedQueries", "day_number"]


def day_number(day: date) -> int:
    """``yyyymmdd`` as the citation tables store dates."""
    return day.year * 10000 + day.month * 100 + day.day


class SqlCitedQueries:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def cited_candidates(self, as_of: date) -> list[CitedCandidate]:
        start, end = day_number(as_of - timedelta(days=365)), day_number(as_of)
        recent = (
            select(citations.c.cited.label("key"), func.count().label("n"))
            .where(citations.c.citing_day >= start, citations.c.citing_day <= end)
            .group_by(citations.c.cited)
            .subquery()
        )
        total = func.coalesce(works.c.cited_edges, 0)
        reported = func.coalesce(works.c.citation_count, 0)
        query: Select[Any] = (
            select(*_PAPER_COLUMNS, recent.c.n, total.label("edges"), reported.label("reported"))
            .join_from(recent, papers, papers.c.id == recent.c.key)
            .outerjoin(works, works.c.key == recent.c.key)
            .where(not_hidden(papers.c.id))
        )
        with self.engine.connect() as conn:
            return [
                CitedCandidate(
                    paper=_from_row(row),
                    citations=max(int(row.edges), int(row.reported), int(row.n)),
                    citations_last_12_months=int(row.n),
                )
                for row in conn.execute(query)
            ]
