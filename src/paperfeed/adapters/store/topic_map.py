"""The map's reads of the topic tables: :class:`~paperfeed.domain.topic_map.MapRecords` on SQLAlchemy Core.

Reads only: the layout (``x``/``y``) and the topic levels are written by the topic build. Papers an
administrator hid are left out of the points (they carry ids and link to pages); the thinned samples of a
paper's small map are anonymous dots and keep them, so a hidden paper cannot be found by a gap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from paperfeed.domain.topic_map import MapPoints, MapTopic, day_number

from .accounts import not_hidden
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
        query = (
            select(
                topic_papers.c.paper_id,
                topic_papers.c.x,
                topic_papers.c.y,
                topic_papers.c.topic_id,
                papers.c.published,
                papers.c.primary_category,
            )
            .select_from(topic_papers.join(papers, papers.c.id == topic_papers.c.paper_id))
            .where(not_hidden(topic_papers.c.paper_id))
            .order_by(topic_papers.c.paper_id)
        )
        out = MapPoints()
        ids, xs, ys, tids, days, cats = out.ids, out.x, out.y, out.topic, out.day, out.category
        with self.engine.connect() as conn:
            result = conn.execution_options(stream_results=True, yield_per=5000).execute(query)
            for pid, x, y, tid, published, category in result:
                ids.append(pid)
                xs.append(x)
                ys.append(y)
                tids.append(tid)
                days.append(day_number(published))
                cats.append(category or "")
        return out

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
