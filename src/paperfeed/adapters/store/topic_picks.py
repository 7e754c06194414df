"""The picked topics and the topic reads of pages, search and "For you", on SQLAlchemy Core.

:class:`SqlTopicPicks` implements both :class:`~paperfeed.domain.topic_picks.TopicPicks` (the
``topic_picks`` table) and :class:`~paperfeed.domain.topic_picks.TopicLookups` (reads of ``topics``,
``topic_papers`` and ``papers``). SQLite and PostgreSQL alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, func, insert, or_, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from paperfeed.domain.topic_picks import TopicCandidate
from paperfeed.domain.topics import Topic

from .accounts import not_hidden
from .columns import as_utc
from .schema import papers
from .schema_topics import topic_papers, topic_picks, topics
from .topics import TOPIC_COLUMNS, topic_from_row

__all__ = ["SqlTopicPicks"]


class SqlTopicPicks:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # -- picks ----------------------------------------------------------------------------------------------

    def picks(self, user_id: int) -> list[tuple[int, datetime]]:
        query = (
            select(topic_picks.c.topic_id, topic_picks.c.picked_at)
            .where(topic_picks.c.user_id == user_id)
            .order_by(topic_picks.c.picked_at, topic_picks.c.topic_id)
        )
        with self.engine.connect() as conn:
            return [(int(t), as_utc(at)) for t, at in conn.execute(query)]

    def pick(self, user_id: int, topic_id: int, at: datetime) -> bool:
        try:
            with self.engine.begin() as conn:
                there = conn.execute(
                    select(topic_picks.c.topic_id).where(
                        topic_picks.c.user_id == user_id, topic_picks.c.topic_id == topic_id
                    )
                ).first()
                if there is not None:
                    return False
                conn.execute(insert(topic_picks).values(user_id=user_id, topic_id=topic_id, picked_at=at))
        except IntegrityError:  # the same pick from two requests at once: the other one made it
            return False
        return True

    def unpick(self, user_id: int, topic_id: int) -> bool:
        with self.engine.begin() as conn:
            done = conn.execute(
                delete(topic_picks).where(
                    topic_picks.c.user_id == user_id, topic_picks.c.topic_id == topic_id
                )
            )
        return bool(done.rowcount)

    def move(self, user_id: int, old_id: int, new_id: int | None) -> None:
        mine = topic_picks.c.user_id == user_id
        with self.engine.begin() as conn:
            row = conn.execute(
                select(topic_picks.c.picked_at).where(mine, topic_picks.c.topic_id == old_id)
            ).first()
            if row is None:
                return
            conn.execute(delete(topic_picks).where(mine, topic_picks.c.topic_id == old_id))
            if new_id is None:
                return
            there = conn.execute(select(topic_picks.c.topic_id).where(mine, topic_picks.c.topic_id == new_id))
            if there.first() is None:
                conn.execute(
                    insert(topic_picks).values(user_id=user_id, topic_id=new_id, picked_at=row.picked_at)
                )

    # -- lookups --------------------------------------------------------------------------------------------

    def parent_of(self, topic_id: int) -> Topic | None:
        parent = select(topics.c.parent_id).where(topics.c.id == topic_id).scalar_subquery()
        query = select(*TOPIC_COLUMNS).where(topics.c.id == parent, topics.c.id != topic_id)
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        return topic_from_row(row) if row is not None else None

    def members(self, topic_id: int) -> frozenset[str]:
        fine = select(topics.c.id).where(or_(topics.c.id == topic_id, topics.c.parent_id == topic_id))
        query = select(topic_papers.c.paper_id).where(
            topic_papers.c.topic_id.in_(fine), not_hidden(topic_papers.c.paper_id)
        )
        with self.engine.connect() as conn:
            return frozenset(conn.execute(query).scalars())

    def candidates(
        self, topic_ids: Sequence[int], since: datetime, until: datetime, per_topic: int
    ) -> list[TopicCandidate]:
        out: list[TopicCandidate] = []
        with self.engine.connect() as conn:
            for tid in dict.fromkeys(topic_ids):
                fine = select(topics.c.id).where(or_(topics.c.id == tid, topics.c.parent_id == tid))
                query = (
                    select(
                        topic_papers.c.paper_id,
                        topic_papers.c.similarity,
                        papers.c.upvotes,
                        papers.c.published,
                    )
                    .select_from(topic_papers.join(papers, papers.c.id == topic_papers.c.paper_id))
                    .where(
                        topic_papers.c.topic_id.in_(fine),
                        papers.c.published >= since,
                        papers.c.published < until,
                        not_hidden(papers.c.id),
                    )
                    .order_by(
                        func.coalesce(papers.c.upvotes, 0).desc(),
                        topic_papers.c.similarity.desc(),
                        papers.c.published.desc(),
                        papers.c.id,
                    )
                    .limit(per_topic)
                )
                for row in conn.execute(query):
                    out.append(
                        TopicCandidate(
                            row.paper_id,
                            tid,
                            float(row.similarity),
                            int(row.upvotes or 0),
                            as_utc(row.published) if row.published is not None else None,
                        )
                    )
        return out
