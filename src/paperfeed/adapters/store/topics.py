"""The topics in the store's database: :class:`~paperfeed.domain.topics.TopicRecords` on SQLAlchemy Core.

See ``schema_topics`` for the tables. A build's :meth:`SqlTopicRecords.replace` is one transaction: on
SQLite (WAL) and PostgreSQL alike readers keep seeing the previous generation until it commits, and a
killed build rolls back whole. Papers an administrator hid are left out of every read of papers.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from sqlalchemy import and_, case, delete, func, insert, or_, select, update
from sqlalchemy.engine import Connection, Engine

from paperfeed.domain.search import Vectors
from paperfeed.domain.topics import (
    Placement,
    Topic,
    TopicAssignment,
    TopicBuild,
    TopicGeneration,
    WeekCount,
)

from .accounts import not_hidden
from .columns import as_date, as_utc
from .embeddings import decode_vector, encode_vector
from .schema import embeddings, papers
from .schema_topics import topic_builds, topic_lineage, topic_papers, topic_weeks, topics

__all__ = ["TOPIC_COLUMNS", "SqlTopicRecords", "topic_from_row"]

_CHUNK = 2000  # rows per executemany


def topic_from_row(row: Any) -> Topic:
    """A :class:`Topic` from a row of :data:`TOPIC_COLUMNS` (the picks' store reads topics too)."""
    return Topic(
        id=row.id,
        label=row.label,
        words=tuple(row.words),
        size=row.size,
        representatives=tuple(row.representatives),
        x=row.x,
        y=row.y,
        level=row.level,
        parent_id=row.parent_id,
    )


TOPIC_COLUMNS = (
    topics.c.id,
    topics.c.label,
    topics.c.words,
    topics.c.size,
    topics.c.representatives,
    topics.c.x,
    topics.c.y,
    topics.c.level,
    topics.c.parent_id,
)


class SqlTopicRecords:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # -- reads ----------------------------------------------------------------------------------------------

    def current(self) -> TopicBuild | None:
        query = select(topic_builds).order_by(topic_builds.c.generation.desc()).limit(1)
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
            if row is None:
                return None
            coarse = conn.execute(select(func.count()).select_from(topics).where(topics.c.level == 1))
            return TopicBuild(
                generation=row.generation,
                built_at=as_utc(row.built_at),
                model_id=row.model_id,
                method=row.method,
                papers=row.papers,
                topics=row.topics,
                noise=row.noise,
                coarse=int(coarse.scalar_one()),
            )

    def topics(self, level: int | None = 0) -> list[Topic]:
        query = select(*TOPIC_COLUMNS).order_by(topics.c.size.desc(), topics.c.id)
        if level is not None:
            query = query.where(topics.c.level == level)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        return [topic_from_row(r) for r in rows]

    def topic(self, topic_id: int) -> Topic | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(*TOPIC_COLUMNS).where(topics.c.id == topic_id)).first()
        return topic_from_row(row) if row is not None else None

    def successor(self, topic_id: int) -> int | None:
        """Follow the lineage from ``topic_id`` (the biggest share, newest generation) to a live topic."""
        seen: set[int] = set()
        current = topic_id
        with self.engine.connect() as conn:
            live = set(conn.execute(select(topics.c.id)).scalars())
            if current in live:
                return current
            while current not in seen:
                seen.add(current)
                row = conn.execute(
                    select(topic_lineage.c.new_id)
                    .where(topic_lineage.c.old_id == current, topic_lineage.c.kind != "kept")
                    .order_by(topic_lineage.c.generation.desc(), topic_lineage.c.share.desc())
                    .limit(1)
                ).first()
                if row is None:
                    return None
                current = int(row.new_id)
                if current in live:
                    return current
        return None

    def memberships(self, level: int = 0) -> dict[int, frozenset[str]]:
        """Level 0: ``topic_papers`` as it is; level 1: each paper under its fine topic's parent."""
        query = select(topic_papers.c.paper_id, topic_papers.c.topic_id)
        if level == 1:
            query = select(topic_papers.c.paper_id, topics.c.parent_id).join(
                topics, topics.c.id == topic_papers.c.topic_id
            )
            query = query.where(topics.c.parent_id.is_not(None))
        out: dict[int, set[str]] = {}
        with self.engine.connect() as conn:
            for paper_id, topic_id in conn.execute(query):
                out.setdefault(topic_id, set()).add(paper_id)
        return {t: frozenset(m) for t, m in out.items()}

    def centroids(self, level: int = 0) -> dict[int, Vectors]:
        query = select(topics.c.id, topics.c.centroid).where(topics.c.level == level)
        with self.engine.connect() as conn:
            return {tid: decode_vector(blob) for tid, blob in conn.execute(query)}

    def anchors(
        self, model_id: str, topic_ids: Sequence[int], per_topic: int
    ) -> dict[int, tuple[list[Vectors], list[tuple[float, float]]]]:
        """Every ``size // per_topic``-th paper of each topic by similarity rank (one query: a window)."""
        out: dict[int, tuple[list[Vectors], list[tuple[float, float]]]] = {}
        ids = sorted(set(topic_ids))
        for start in range(0, len(ids), 500):
            ranked = (
                select(
                    topic_papers.c.paper_id,
                    topic_papers.c.topic_id,
                    topic_papers.c.x,
                    topic_papers.c.y,
                    func.row_number()
                    .over(
                        partition_by=topic_papers.c.topic_id,
                        order_by=(topic_papers.c.similarity.desc(), topic_papers.c.paper_id),
                    )
                    .label("rank"),
                )
                .where(topic_papers.c.topic_id.in_(ids[start : start + 500]))
                .subquery()
            )
            step = case((topics.c.size > per_topic, topics.c.size // per_topic), else_=1)
            query = (
                select(ranked.c.topic_id, ranked.c.x, ranked.c.y, embeddings.c.vector)
                .join(topics, topics.c.id == ranked.c.topic_id)
                .join(
                    embeddings,
                    and_(embeddings.c.paper_id == ranked.c.paper_id, embeddings.c.model_id == model_id),
                )
                .where((ranked.c.rank - 1) % step == 0)
            )
            with self.engine.connect() as conn:
                for tid, x, y, blob in conn.execute(query):
                    vectors, places = out.setdefault(tid, ([], []))
                    vectors.append(decode_vector(blob))
                    places.append((x, y))
        return out

    def next_id(self) -> int:
        with self.engine.connect() as conn:
            built = conn.execute(select(func.max(topic_builds.c.next_topic_id))).scalar()
            live = conn.execute(select(func.max(topics.c.id))).scalar()
            old = conn.execute(select(func.max(topic_lineage.c.old_id))).scalar()
        return max(built or 1, (live or 0) + 1, (old or 0) + 1)

    def topic_of(self, paper_id: str) -> Topic | None:
        query = (
            select(*TOPIC_COLUMNS)
            .select_from(topics.join(topic_papers, topic_papers.c.topic_id == topics.c.id))
            .where(topic_papers.c.paper_id == paper_id)
        )
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        return topic_from_row(row) if row is not None else None

    def paper_ids(self, topic_id: int, *, limit: int, offset: int = 0) -> list[str]:
        query = (
            select(papers.c.id)
            .select_from(topic_papers.join(papers, papers.c.id == topic_papers.c.paper_id))
            .where(
                or_(  # a coarse topic's papers are its fine topics'
                    topic_papers.c.topic_id == topic_id,
                    topic_papers.c.topic_id.in_(select(topics.c.id).where(topics.c.parent_id == topic_id)),
                ),
                not_hidden(papers.c.id),
            )
            .order_by(
                func.coalesce(papers.c.upvotes, -1).desc(),
                papers.c.published.desc(),
                papers.c.id.desc(),
            )
            .limit(limit)
            .offset(offset)
        )
        with self.engine.connect() as conn:
            return list(conn.execute(query).scalars())

    def weeks(
        self, topic_ids: Sequence[int] | None = None, *, since: date | None = None, until: date | None = None
    ) -> dict[int, list[WeekCount]]:
        query = select(topic_weeks).order_by(topic_weeks.c.topic_id, topic_weeks.c.week)
        if topic_ids is not None:
            query = query.where(topic_weeks.c.topic_id.in_(list(topic_ids)))
        if since is not None:
            query = query.where(topic_weeks.c.week >= since)
        if until is not None:
            query = query.where(topic_weeks.c.week <= until)
        out: dict[int, list[WeekCount]] = {}
        with self.engine.connect() as conn:
            for row in conn.execute(query):
                out.setdefault(row.topic_id, []).append(WeekCount(as_date(row.week), row.papers, row.upvotes))
        return out

    def total_weeks(self, *, since: date | None = None, until: date | None = None) -> list[WeekCount]:
        """Summed over the fine topics only (coarse topics' weeks count the same papers again)."""
        query = (
            select(topic_weeks.c.week, func.sum(topic_weeks.c.papers), func.sum(topic_weeks.c.upvotes))
            .join(topics, topics.c.id == topic_weeks.c.topic_id)
            .where(topics.c.level == 0)
            .group_by(topic_weeks.c.week)
            .order_by(topic_weeks.c.week)
        )
        if since is not None:
            query = query.where(topic_weeks.c.week >= since)
        if until is not None:
            query = query.where(topic_weeks.c.week <= until)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        return [WeekCount(as_date(w), int(n), int(u)) for w, n, u in rows]

    def unplaced(self, model_id: str, limit: int) -> list[tuple[str, Vectors]]:
        query = (
            select(embeddings.c.paper_id, embeddings.c.vector)
            .outerjoin(topic_papers, topic_papers.c.paper_id == embeddings.c.paper_id)
            .where(embeddings.c.model_id == model_id, topic_papers.c.paper_id.is_(None))
            .order_by(embeddings.c.paper_id)
            .limit(limit)
        )
        with self.engine.connect() as conn:
            return [(pid, decode_vector(blob)) for pid, blob in conn.execute(query)]

    def count_unplaced(self, model_id: str) -> int:
        query = (
            select(func.count())
            .select_from(embeddings.outerjoin(topic_papers, topic_papers.c.paper_id == embeddings.c.paper_id))
            .where(embeddings.c.model_id == model_id, topic_papers.c.paper_id.is_(None))
        )
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar_one())

    # -- writes ---------------------------------------------------------------------------------------------

    def replace(self, generation: TopicGeneration) -> TopicBuild:
        with self.engine.begin() as conn:
            last = conn.execute(select(func.max(topic_builds.c.generation))).scalar()
            number = (last or 0) + 1
            conn.execute(delete(topic_papers))
            conn.execute(delete(topic_weeks))
            conn.execute(delete(topics))
            topic_rows = [
                {
                    "id": t.id,
                    "label": t.label,
                    "words": list(t.words),
                    "size": t.size,
                    "representatives": list(t.representatives),
                    "centroid": encode_vector(generation.centroids[t.id]),
                    "x": t.x,
                    "y": t.y,
                    "level": t.level,
                    "parent_id": t.parent_id,
                }
                for t in generation.topics
            ]
            if topic_rows:
                conn.execute(insert(topics), topic_rows)
            _insert_assignments(conn, generation.assignments)
            self._add_weeks(conn, generation.weeks, fresh=True)
            lineage = [
                {"generation": number, "old_id": ln.old_id, "new_id": ln.new_id, "kind": ln.kind.value}
                | {"share": ln.share}
                for ln in generation.lineage
            ]
            if lineage:
                conn.execute(insert(topic_lineage), lineage)
            build = TopicBuild(
                generation=number,
                built_at=generation.built_at,
                model_id=generation.model_id,
                method=generation.method,
                papers=len(generation.assignments),
                topics=sum(t.level == 0 for t in generation.topics),
                noise=generation.noise,
                coarse=sum(t.level == 1 for t in generation.topics),
            )
            conn.execute(
                insert(topic_builds).values(
                    generation=number,
                    built_at=build.built_at,
                    model_id=build.model_id,
                    method=build.method,
                    papers=build.papers,
                    topics=build.topics,
                    noise=build.noise,
                    next_topic_id=generation.next_id,
                )
            )
        return build

    def place(self, placement: Placement) -> int:
        if not placement.assignments:
            return 0
        with self.engine.begin() as conn:
            _insert_assignments(conn, placement.assignments)
            sizes: dict[int, int] = dict(placement.sizes)
            for a in placement.assignments:
                sizes[a.topic_id] = sizes.get(a.topic_id, 0) + 1
            for tid, n in sizes.items():
                conn.execute(update(topics).where(topics.c.id == tid).values(size=topics.c.size + n))
            self._add_weeks(conn, placement.weeks, fresh=False)
        return len(placement.assignments)

    @staticmethod
    def _add_weeks(conn: Connection, weeks: dict[int, list[WeekCount]], *, fresh: bool) -> None:
        rows = [
            {"topic_id": tid, "week": w.week, "papers": w.papers, "upvotes": w.upvotes}
            for tid, series in weeks.items()
            for w in series
        ]
        if fresh:
            for start in range(0, len(rows), _CHUNK):
                conn.execute(insert(topic_weeks), rows[start : start + _CHUNK])
            return
        for row in rows:  # a placement touches a few (topic, week) cells: update or insert each
            done = conn.execute(
                update(topic_weeks)
                .where(topic_weeks.c.topic_id == row["topic_id"], topic_weeks.c.week == row["week"])
                .values(
                    papers=topic_weeks.c.papers + row["papers"],
                    upvotes=topic_weeks.c.upvotes + row["upvotes"],
                )
            )
            if done.rowcount == 0:
                conn.execute(insert(topic_weeks).values(**row))


def _insert_assignments(conn: Connection, assignments: Sequence[TopicAssignment]) -> None:
    """Papers' topics and map places, in chunks (a build writes every paper of the store)."""
    rows = [
        {"paper_id": a.paper_id, "topic_id": a.topic_id, "similarity": a.similarity, "x": a.x, "y": a.y}
        for a in assignments
    ]
    for start in range(0, len(rows), _CHUNK):
        conn.execute(insert(topic_papers), rows[start : start + _CHUNK])
