"""Tables of readers' libraries: tags and the papers saved in them, read / "not interested" marks, notes,
followed authors and saved searches. Every row belongs to a user and goes with them (ON DELETE CASCADE).

Names are matched through a ``*_key`` column (case-folded; see :mod:`paperfeed.domain.library`), so the
uniqueness rules hold in SQLite and PostgreSQL alike without collations or expression indexes.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)

from .columns import UtcDateTime
from .schema import metadata

__all__ = [
    "library_authors",
    "library_marks",
    "library_notes",
    "library_saves",
    "library_searches",
    "library_tags",
    "metadata",
]

_USER = "users.id"
_PAPER = "papers.id"

library_tags = Table(
    "library_tags",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("user_id", Integer, ForeignKey(_USER, ondelete="CASCADE"), nullable=False),
    Column("name", String(100), nullable=False),
    Column("name_key", String(300), nullable=False),
    Column("public", Boolean, nullable=False, server_default=false()),
    Column("created_at", UtcDateTime(), nullable=False),
    UniqueConstraint("user_id", "name_key", name="uq_library_tags_user_name"),
)

# A paper in a tag. ``user_id`` repeats the tag's owner so "my saved papers" is one index range.
library_saves = Table(
    "library_saves",
    metadata,
    Column("tag_id", Integer, ForeignKey("library_tags.id", ondelete="CASCADE"), primary_key=True),
    Column("paper_id", String(64), ForeignKey(_PAPER, ondelete="CASCADE"), primary_key=True),
    Column("user_id", Integer, ForeignKey(_USER, ondelete="CASCADE"), nullable=False),
    Column("saved_at", UtcDateTime(), nullable=False),
    Index("ix_library_saves_user_paper", "user_id", "paper_id"),
    Index("ix_library_saves_tag_saved_at", "tag_id", "saved_at"),
)

# Per reader and paper: read and "not interested" marks (NULL = not marked).
library_marks = Table(
    "library_marks",
    metadata,
    Column("user_id", Integer, ForeignKey(_USER, ondelete="CASCADE"), primary_key=True),
    Column("paper_id", String(64), ForeignKey(_PAPER, ondelete="CASCADE"), primary_key=True),
    Column("read_at", UtcDateTime()),
    Column("dismissed_at", UtcDateTime()),
)

library_notes = Table(
    "library_notes",
    metadata,
    Column("user_id", Integer, ForeignKey(_USER, ondelete="CASCADE"), primary_key=True),
    Column("paper_id", String(64), ForeignKey(_PAPER, ondelete="CASCADE"), primary_key=True),
    Column("body", Text, nullable=False),  # Markdown source; rendered and sanitised when shown
    Column("created_at", UtcDateTime(), nullable=False),
    Column("updated_at", UtcDateTime(), nullable=False),
)

library_authors = Table(
    "library_authors",
    metadata,
    Column("user_id", Integer, ForeignKey(_USER, ondelete="CASCADE"), primary_key=True),
    Column("name_key", String(600), primary_key=True),
    Column("name", String(300), nullable=False),
    Column("followed_at", UtcDateTime(), nullable=False),
)

# Saved searches act as alerts; ``feed_token`` is the secret in the URL of the alert's private feed.
library_searches = Table(
    "library_searches",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("user_id", Integer, ForeignKey(_USER, ondelete="CASCADE"), nullable=False),
    Column("name", String(200), nullable=False),
    Column("name_key", String(600), nullable=False),
    Column("query", Text, nullable=False),
    Column("filters", JSON, nullable=False),
    Column("feed_token", String(64), nullable=False, unique=True),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("last_seen_at", UtcDateTime()),
    UniqueConstraint("user_id", "name_key", name="uq_library_searches_user_name"),
)
