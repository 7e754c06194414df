"""Tables of the topics (issue #17): the current generation at two levels, its papers, weekly counts, the
lineage, and the topics readers picked.

Only one generation is live: a build replaces ``topics``, ``topic_papers`` and ``topic_weeks`` and adds a
``topic_builds`` row in **one transaction**, so a build killed mid-way leaves the previous topics served.
``topic_builds.next_topic_id`` keeps ids from ever being reused; ``topic_lineage`` keeps, across builds,
which new topic each old id went to (merges, splits), so an old ``/topics/{id}`` can redirect.
``topic_weeks`` holds papers and upvotes per topic per ISO week (Monday) of the papers' published dates,
written by the build and raised by the daily placement, so the pages never aggregate on a read.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Column,
    Date,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    SmallInteger,
    String,
    Table,
    Text,
)

from .columns import UtcDateTime
from .schema import metadata

__all__ = [
    "metadata",
    "topic_builds",
    "topic_lineage",
    "topic_papers",
    "topic_picks",
    "topic_weeks",
    "topics",
]

topic_builds = Table(
    "topic_builds",
    metadata,
    Column("generation", Integer, primary_key=True, autoincrement=False),
    Column("built_at", UtcDateTime(), nullable=False),
    Column("model_id", String(200), nullable=False),
    Column("method", Text, nullable=False),
    Column("papers", Integer, nullable=False),
    Column("topics", Integer, nullable=False),
    Column("noise", Integer, nullable=False),
    Column("next_topic_id", Integer, nullable=False),
)

topics = Table(
    "topics",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("label", Text, nullable=False),
    Column("words", JSON, nullable=False),
    Column("size", Integer, nullable=False),
    Column("representatives", JSON, nullable=False),
    Column("centroid", LargeBinary, nullable=False),  # float32 little-endian, L2-normalised
    Column("x", Float, nullable=False),
    Column("y", Float, nullable=False),
    Column("level", SmallInteger, nullable=False, server_default="0"),  # 0 fine, 1 coarse
    Column("parent_id", Integer, nullable=True),  # a fine topic's coarse topic
    Index("ix_topics_parent", "parent_id"),
)

topic_papers = Table(
    "topic_papers",
    metadata,
    Column("paper_id", String(64), ForeignKey("papers.id", ondelete="CASCADE"), primary_key=True),
    Column("topic_id", Integer, nullable=False),
    Column("similarity", Float, nullable=False),
    Column("x", Float, nullable=False),
    Column("y", Float, nullable=False),
    Index("ix_topic_papers_topic", "topic_id", "similarity"),
)

topic_weeks = Table(
    "topic_weeks",
    metadata,
    Column("topic_id", Integer, primary_key=True, autoincrement=False),
    Column("week", Date, primary_key=True),
    Column("papers", Integer, nullable=False),
    Column("upvotes", Integer, nullable=False),
)

topic_lineage = Table(
    "topic_lineage",
    metadata,
    Column("generation", Integer, primary_key=True, autoincrement=False),
    Column("old_id", Integer, primary_key=True, autoincrement=False),
    Column("new_id", Integer, primary_key=True, autoincrement=False),
    Column("kind", String(16), nullable=False),
    Column("share", Float, nullable=False),
    Index("ix_topic_lineage_old", "old_id", "generation"),
)

topic_picks = Table(  # the topics a reader chose as a cold start for "For you"
    "topic_picks",
    metadata,
    Column("user_id", Integer, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    Column("topic_id", Integer, primary_key=True, autoincrement=False),
    Column("picked_at", UtcDateTime(), nullable=False),
)
