"""Tables of reading groups (docs/groups.md): groups, members, invitations, the shared queue and its
votes, journal-club sessions, and the mute rules of readers and groups.

Every row goes with its group (ON DELETE CASCADE); a member's rows go with their account, except what
they wrote for the group (queue entries, session notes), which stays with the author set to NULL.
Secrets are stored as the alert feeds' are: the calendar token in clear (it is the feed URL, like
``library_searches.feed_token``), an invitation's token only as its SHA-256 digest.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    false,
)

from .columns import UtcDateTime
from .schema import metadata

__all__ = [
    "group_invitations",
    "group_members",
    "group_mutes",
    "group_queue",
    "group_searches",
    "group_sessions",
    "group_votes",
    "groups",
    "reader_mutes",
]

_USER = "users.id"
_PAPER = "papers.id"
_GROUP = "groups.id"

groups = Table(
    "groups",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False),
    Column("description", Text, nullable=False, server_default=""),
    Column("created_at", UtcDateTime(), nullable=False),
)

group_members = Table(
    "group_members",
    metadata,
    Column("group_id", Integer, ForeignKey(_GROUP, ondelete="CASCADE"), primary_key=True),
    Column("user_id", Integer, ForeignKey(_USER, ondelete="CASCADE"), primary_key=True),
    Column("role", String(16), nullable=False),  # owner | member
    Column("joined_at", UtcDateTime(), nullable=False),
    Column("digest", Boolean, nullable=False, server_default=false()),
    Column("calendar_token", String(64), nullable=False, unique=True),  # the member's iCalendar feed URL
    Index("ix_group_members_user", "user_id"),
)

group_invitations = Table(
    "group_invitations",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("group_id", Integer, ForeignKey(_GROUP, ondelete="CASCADE"), nullable=False),
    Column("email", String(320), nullable=False),  # lower-cased
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("invited_by", Integer, ForeignKey(_USER, ondelete="SET NULL")),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("expires_at", UtcDateTime(), nullable=False),
    Column("used_at", UtcDateTime()),
    Column("used_by", Integer, ForeignKey(_USER, ondelete="SET NULL")),
    Index("ix_group_invitations_group", "group_id"),
)

group_queue = Table(
    "group_queue",
    metadata,
    Column("group_id", Integer, ForeignKey(_GROUP, ondelete="CASCADE"), primary_key=True),
    Column("paper_id", String(64), ForeignKey(_PAPER, ondelete="CASCADE"), primary_key=True),
    Column("added_by", Integer, ForeignKey(_USER, ondelete="SET NULL")),
    Column("note", Text, nullable=False, server_default=""),
    Column("added_at", UtcDateTime(), nullable=False),
)

# One vote per member: "the next paper I want us to read". Moving it replaces the row.
group_votes = Table(
    "group_votes",
    metadata,
    Column("group_id", Integer, ForeignKey(_GROUP, ondelete="CASCADE"), primary_key=True),
    Column("user_id", Integer, ForeignKey(_USER, ondelete="CASCADE"), primary_key=True),
    Column("paper_id", String(64), ForeignKey(_PAPER, ondelete="CASCADE"), nullable=False),
    Column("voted_at", UtcDateTime(), nullable=False),
    Index("ix_group_votes_paper", "group_id", "paper_id"),
)

group_sessions = Table(
    "group_sessions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("group_id", Integer, ForeignKey(_GROUP, ondelete="CASCADE"), nullable=False),
    Column("starts_at", UtcDateTime(), nullable=False),
    Column("presenter_id", Integer, ForeignKey(_USER, ondelete="SET NULL")),
    Column("paper_id", String(64), ForeignKey(_PAPER, ondelete="CASCADE"), nullable=False),
    Column("notes", Text, nullable=False, server_default=""),  # Markdown; rendered and sanitised when shown
    Column("notes_updated_at", UtcDateTime()),
    Column("notes_updated_by", Integer, ForeignKey(_USER, ondelete="SET NULL")),
    Column("created_at", UtcDateTime(), nullable=False),
    Index("ix_group_sessions_group_start", "group_id", "starts_at"),
)

# The group's saved searches: their new matches go into the weekly group digest.
group_searches = Table(
    "group_searches",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("group_id", Integer, ForeignKey(_GROUP, ondelete="CASCADE"), nullable=False),
    Column("query", String(300), nullable=False),
    Column("created_by", Integer, ForeignKey(_USER, ondelete="SET NULL")),
    Column("created_at", UtcDateTime(), nullable=False),
    Index("ix_group_searches_group", "group_id"),
)

# Mute rules (docs/groups.md, "Mute rules"): kind is author | category | word; ``key`` is the value as
# matched (author_key for authors, case-folded otherwise), ``value`` as the reader typed it.
reader_mutes = Table(
    "reader_mutes",
    metadata,
    Column("user_id", Integer, ForeignKey(_USER, ondelete="CASCADE"), primary_key=True),
    Column("kind", String(16), primary_key=True),
    Column("key", String(300), primary_key=True),
    Column("value", String(200), nullable=False),
    Column("created_at", UtcDateTime(), nullable=False),
)

group_mutes = Table(
    "group_mutes",
    metadata,
    Column("group_id", Integer, ForeignKey(_GROUP, ondelete="CASCADE"), primary_key=True),
    Column("kind", String(16), primary_key=True),
    Column("key", String(300), primary_key=True),
    Column("value", String(200), nullable=False),
    Column("created_at", UtcDateTime(), nullable=False),
)
