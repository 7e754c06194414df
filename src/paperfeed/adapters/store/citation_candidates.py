"""The store's papers by publication date, for the citation harvest (``domain.citation_harvest``)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time

from sqlalchemy import select
from sqlalchemy.engine import Engine

from .schema import papers

__all__ = ["SqlPublishedPapers"]


class SqlPublishedPapers:
    """:class:`~paperfeed.domain.citation_harvest.PublishedPapers` over the ``papers`` table."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def published_since(self, since: date) -> list[str]:
        start = datetime.combine(since, time.min, tzinfo=UTC)
        query = (
            select(papers.c.id)
            .where(papers.c.published >= start)
            .order_by(papers.c.published, papers.c.id)  # ix_papers_published_id
        )
        with self.engine.connect() as conn:
            return [row[0] for row in conn.execute(query)]
