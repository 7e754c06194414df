"""community: readers' upvotes, papers submitted to the daily feed, comments.

Revision ID: 0007_community
Revises: 0006_library
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0007_community"
down_revision = "0006_library"
branch_labels = None
depends_on = None

_USER = "users.id"
_PAPER = "papers.id"


def upgrade() -> None:
    op.create_table(
        "paper_upvotes",
        sa.Column("paper_id", sa.String(64), sa.ForeignKey(_PAPER, ondelete="CASCADE"), primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey(_USER, ondelete="CASCADE"), primary_key=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_paper_upvotes_user_created", "paper_upvotes", ["user_id", "created_at"])
    op.create_index("ix_paper_upvotes_created", "paper_upvotes", ["created_at"])
    op.create_table(
        "paper_submissions",
        sa.Column("paper_id", sa.String(64), sa.ForeignKey(_PAPER, ondelete="CASCADE"), primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey(_USER, ondelete="SET NULL")),
        sa.Column("day", sa.Date, nullable=False),
        sa.Column("submitted_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_paper_submissions_user_day", "paper_submissions", ["user_id", "day"])
    op.create_table(
        "paper_comments",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("paper_id", sa.String(64), sa.ForeignKey(_PAPER, ondelete="CASCADE"), nullable=False),
        sa.Column("user_id", sa.Integer, sa.ForeignKey(_USER, ondelete="CASCADE"), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("edited_at", sa.DateTime(timezone=True)),
        sa.Column("hidden_at", sa.DateTime(timezone=True)),
        sa.Column("hidden_by", sa.Integer, sa.ForeignKey(_USER, ondelete="SET NULL")),
    )
    op.create_index("ix_paper_comments_paper_created", "paper_comments", ["paper_id", "created_at"])
    op.create_index("ix_paper_comments_user_created", "paper_comments", ["user_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_paper_comments_user_created", "paper_comments")
    op.drop_index("ix_paper_comments_paper_created", "paper_comments")
    op.drop_table("paper_comments")
    op.drop_index("ix_paper_submissions_user_day", "paper_submissions")
    op.drop_table("paper_submissions")
    op.drop_index("ix_paper_upvotes_created", "paper_upvotes")
    op.drop_index("ix_paper_upvotes_user_created", "paper_upvotes")
    op.drop_table("paper_upvotes")
