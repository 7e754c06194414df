"""The store reads "For you" needs: the recent papers that have a vector, and who wrote them.

Plain SQLAlchemy Core over ``papers`` and ``embeddings`` (portable to PostgreSQL). Author names are matched
in Python with the library's :func:`~paperfeed.domain.library.author_key` (accent- and case-insensitive),
which SQL cannot do portably; the service caches the result per window and :meth:`version`.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from paperfeed.domain.library import InvalidLibraryInput, author_key

from .schema import embeddings, papers

__all__ = ["RecentPaper", "SqlRecommendQueries"]

RecentPaper = tuple[str, tuple[str, ...]]  # (paper id, author keys)


def _keys(names: object) -> tuple[str, ...]:
    out = []
    for name in names if isinstance(names, list) else ():
        try:
            out.append(author_key(str(name)))
        except InvalidLibraryInput:  # an empty or absurd name on a paper: nobody can follow it
            continue
    return tuple(out)


class SqlRecommendQueries:
    """:class:`~paperfeed.domain.recommend.RecommendQueries` on the paper store's engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def latest_published(self) -> datetime | None:
        with self.engine.connect() as conn:
            return conn.execute(select(func.max(papers.c.published))).scalar()

    def version(self, model_id: str) -> str:
        """Changes when papers change or vectors of ``model_id`` are added (cheap: two indexed maxima)."""
        with self.engine.connect() as conn:
            modified = conn.execute(select(func.max(papers.c.modified_at))).scalar()
            vectors = conn.execute(
                select(func.max(embeddings.c.created_at), func.count()).where(
                    embeddings.c.model_id == model_id
                )
            ).one()
        return f"{modified}|{vectors[0]}|{vectors[1]}"

    def recent(self, model_id: str, since: datetime, until: datetime) -> list[RecentPaper]:
        """Papers published in ``[since, until)`` that have a vector of ``model_id``, by id."""
        query = (
            select(papers.c.id, papers.c.authors)
            .select_from(papers.join(embeddings, embeddings.c.paper_id == papers.c.id))
            .where(
                embeddings.c.model_id == model_id,
                papers.c.published >= since,
                papers.c.published < until,
            )
            .order_by(papers.c.id)
        )
        with self.engine.connect() as conn:
            return [(row.id, _keys(row.authors)) for row in conn.execute(query)]
