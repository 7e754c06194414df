"""Tables of the community features: readers' upvotes, papers they submitted to the daily feed, comments.

Every row refers to a paper and a reader and goes with them (ON DELETE CASCADE; a submission outlives
its submitter's account). Counts are never stored: they are counted from these rows when read, so
concurrent votes cannot leave a counter out of step, on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

from sqlalchemy import Column, Date, ForeignKey, Index, Integer, String, Table, Text

from .columns import UtcDateTime
from .schema import metadata

__all__ = ["metadata", "paper_comments", "paper_submissions", "paper_upvotes"]

_USER = "users.id"
_PAPER = "papers.id"

# One vote per reader and paper: the primary key is what makes double clicks and races harmless.
paper_upvotes = Table(
    "paper_upvotes",
    metadata,
    Column("paper_id", String(64), ForeignKey(_PAPER, ondelete="CASCADE"), primary_key=True),
    Column("user_id", Integer, ForeignKey(_USER, ondelete="CASCADE"), primary_key=True),
    Column("created_at", UtcDateTime(), nullable=False),
    Index("ix_paper_upvotes_user_created", "user_id", "created_at"),
    Index("ix_paper_upvotes_created", "created_at"),  # the newest vote, for cache keys
)

# A paper put on the daily feed by a reader (one per paper: the first submitter, as HF's
# submittedOnDailyBy). Its listing row (source "submitted") is written in the same transaction.
paper_submissions = Table(
    "paper_submissions",
    metadata,
    Column("paper_id", String(64), ForeignKey(_PAPER, ondelete="CASCADE"), primary_key=True),
    Column("user_id", Integer, ForeignKey(_USER, ondelete="SET NULL")),
    Column("day", Date, nullable=False),
    Column("submitted_at", UtcDateTime(), nullable=False),
    Index("ix_paper_submissions_user_day", "user_id", "day"),
)

paper_comments = Table(
    "paper_comments",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("paper_id", String(64), ForeignKey(_PAPER, ondelete="CASCADE"), nullable=False),
    Column("user_id", Integer, ForeignKey(_USER, ondelete="CASCADE"), nullable=False),
    Column("body", Text, nullable=False),  # Markdown source; rendered and sanitised when shown
    Column("created_at", UtcDateTime(), nullable=False),
    Column("edited_at", UtcDateTime()),
    Column("hidden_at", UtcDateTime()),  # hidden by an administrator
    Column("hidden_by", Integer, ForeignKey(_USER, ondelete="SET NULL")),
    Index("ix_paper_comments_paper_created", "paper_id", "created_at"),
    Index("ix_paper_comments_user_created", "user_id", "created_at"),
)
