"""library: tags and saved papers, read / "not interested" marks, notes, followed authors, saved searches.

Revision ID: 0006_library
Revises: 0005_accounts
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0006_library"
down_revision = "0005_accounts"
branch_labels = None
depends_on = None

_USER = "users.id"
_PAPER = "papers.id"


def _user() -> sa.Column[int]:
    return sa.Column("user_id", sa.Integer, sa.ForeignKey(_USER, ondelete="CASCADE"), nullable=False)


def upgrade() -> None:
    op.create_table(
        "library_tags",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        _user(),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("name_key", sa.String(300), nullable=False),
        sa.Column("public", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("user_id", "name_key", name="uq_library_tags_user_name"),
    )
    op.create_table(
        "library_saves",
        sa.Column(
            "tag_id", sa.Integer, sa.ForeignKey("library_tags.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("paper_id", sa.String(64), sa.ForeignKey(_PAPER, ondelete="CASCADE"), primary_key=True),
        _user(),
        sa.Column("saved_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_library_saves_user_paper", "library_saves", ["user_id", "paper_id"])
    op.create_index("ix_library_saves_tag_saved_at", "library_saves", ["tag_id", "saved_at"])
    op.create_table(
        "library_marks",
        sa.Column("user_id", sa.Integer, sa.ForeignKey(_USER, ondelete="CASCADE"), primary_key=True),
        sa.Column("paper_id", sa.String(64), sa.ForeignKey(_PAPER, ondelete="CASCADE"), primary_key=True),
        sa.Column("read_at", sa.DateTime(timezone=True)),
        sa.Column("dismissed_at", sa.DateTime(timezone=True)),
    )
    op.create_table(
        "library_notes",
        sa.Column("user_id", sa.Integer, sa.ForeignKey(_USER, ondelete="CASCADE"), primary_key=True),
        sa.Column("paper_id", sa.String(64), sa.ForeignKey(_PAPER, ondelete="CASCADE"), primary_key=True),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "library_authors",
        sa.Column("user_id", sa.Integer, sa.ForeignKey(_USER, ondelete="CASCADE"), primary_key=True),
        sa.Column("name_key", sa.String(600), primary_key=True),
        sa.Column("name", sa.String(300), nullable=False),
        sa.Column("followed_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "library_searches",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        _user(),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("name_key", sa.String(600), nullable=False),
        sa.Column("query", sa.Text, nullable=False),
        sa.Column("filters", sa.JSON, nullable=False),
        sa.Column("feed_token", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True)),
        sa.UniqueConstraint("user_id", "name_key", name="uq_library_searches_user_name"),
    )


def downgrade() -> None:
    op.drop_table("library_searches")
    op.drop_table("library_authors")
    op.drop_table("library_notes")
    op.drop_table("library_marks")
    op.drop_index("ix_library_saves_tag_saved_at", "library_saves")
    op.drop_index("ix_library_saves_user_paper", "library_saves")
    op.drop_table("library_saves")
    op.drop_table("library_tags")
