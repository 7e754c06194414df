"""The map's reads of the topic tables: :class:`~paperfeed.domain.topic_map.MapRecords` on SQLAlchemy Core.

Reads only: the layout (``x``/``y``) and the topic levels are written by the topic build. Papers an
administrator hid are left out of the points (they carry ids and link to pages); the thinned samples of a
paper's small map are anonymous dots and keep them, so a hidden paper cannot be found by a gap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Integer, case, cast, extract, func, select
from sqlalchemy.engine import Engine
from sqlalchemy.sql.elements import ColumnElement

from paperfeed.domain.topic_map import MAX_DAY, MapPoints, MapTopic

from .accounts import hidden_paper_ids, not_hidden
from .schema import papers
from .schema_topics import topic_builds, topic_papers, topics

__all__ = ["SqlMapRecords"]


class SqlMapRecords:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def generation(self) -> int | None:
        with self.engine.connect() as conn:
            value = conn.execute(select(func.max(topic_builds.c.generation))).scalar()
        return int(value) if value is not None else None

    def map_topics(self) -> list[MapTopic]:
        query = select(
            topics.c.id,
            topics.c.label,
            topics.c.x,
            topics.c.y,
            topics.c.size,
            topics.c.level,
            topics.c.parent_id,
        ).order_by(topics.c.level.desc(), topics.c.size.desc(), topics.c.id)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        return [
            MapTopic(r.id, r.label, float(r.x), float(r.y), int(r.size), int(r.level or 0), r.parent_id)
            for r in rows
        ]

    def map_points(self) -> MapPoints:
        # The published day is computed by the database (parsing 200,000 timestamps into datetimes in
        # Python took most of the time), hidden papers are dropped in Python (a small table read whole,
        # cheaper than a correlated NOT EXISTS per row), and the rows are split into columns by zip.
        query = (
            select(
                topic_papers.c.paper_id,
                topic_papers.c.x,
                topic_papers.c.y,
                topic_papers.c.topic_id,
                self._day(),
                papers.c.primary_category,
            )
            .select_from(topic_papers.join(papers, papers.c.id == topic_papers.c.paper_id))
            .order_by(topic_papers.c.paper_id)
        )
        hidden = hidden_paper_ids(self.engine)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        if hidden:
            rows = [r for r in rows if r[0] not in hidden]
        if not rows:
            return MapPoints()
        ids, xs, ys, tids, days, cats = zip(*rows, strict=True)
        return MapPoints(
            ids=list(ids),
            x=list(xs),
            y=list(ys),
            topic=list(tids),
            day=[0 if d is None else max(1, min(int(d), MAX_DAY)) for d in days],
            category=[c or "" for c in cats],
        )

    def _day(self) -> ColumnElement[Any]:
        """Days from 1970-01-01 to the published date (UTC) as the database computes them."""
        published = papers.c.published
        if self.engine.dialect.name == "sqlite":  # stored as naive UTC text
            # floor() is SQLAlchemy's Python math.floor here, which raises on NULL (no published date):
            # the CASE keeps NULL away from it (NULL days are "unknown", 0)
            julian = func.julianday(published)
            return case((julian.is_(None), None), else_=cast(func.floor(julian - 2440587.5), Integer))
        return cast(func.floor(extract("epoch", published) / 86400), Integer)

    def place_of(self, paper_id: str) -> tuple[float, float, int] | None:
        query = select(topic_papers.c.x, topic_papers.c.y, topic_papers.c.topic_id).where(
            topic_papers.c.paper_id == paper_id
        )
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        return (float(row.x), float(row.y), int(row.topic_id)) if row is not None else None

    def sample(self, step: int, topic_id: int | None = None) -> list[tuple[float, float]]:
        ranked: Any = select(
            topic_papers.c.x,
            topic_papers.c.y,
            func.row_number().over(order_by=topic_papers.c.paper_id).label("n"),
        )
        if topic_id is not None:
            ranked = ranked.where(topic_papers.c.topic_id == topic_id)
        inner = ranked.subquery()
        query = select(inner.c.x, inner.c.y).where((inner.c.n - 1) % max(step, 1) == 0)
        with self.engine.connect() as conn:
            return [(float(x), float(y)) for x, y in conn.execute(query)]

    def titles(self, paper_ids: Sequence[str]) -> dict[str, str]:
        if not paper_ids:
            return {}
        query = select(papers.c.id, papers.c.title).where(
            papers.c.id.in_(list(paper_ids)), not_hidden(papers.c.id)
        )
        with self.engine.connect() as conn:
            return {str(pid): str(title) for pid, title in conn.execute(query)}

    def extent(self) -> tuple[int, float, float, float, float]:
        tp = topic_papers.c
        query = select(func.count(), func.min(tp.x), func.min(tp.y), func.max(tp.x), func.max(tp.y))
        with self.engine.connect() as conn:
            n, x0, y0, x1, y1 = conn.execute(query).one()
        if not n:
            return (0, 0.0, 0.0, 0.0, 0.0)
        return (int(n), float(x0), float(y0), float(x1), float(y1))
