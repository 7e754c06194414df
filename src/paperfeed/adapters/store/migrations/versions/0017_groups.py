"""groups: reading groups, members, invitations, the shared queue and votes, journal-club sessions, the
group's saved searches, and the mute rules of readers and groups (docs/groups.md).

Revision ID: 0017_groups
Revises: 0016_citation_import
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0017_groups"
down_revision = "0016_citation_import"
branch_labels = None
depends_on = None

_USER = "users.id"
_PAPER = "papers.id"
_GROUP = "groups.id"


def _at(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "groups",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("description", sa.Text, nullable=False, server_default=""),
        _at("created_at"),
    )
    op.create_table(
        "group_members",
        sa.Column("group_id", sa.Integer, sa.ForeignKey(_GROUP, ondelete="CASCADE"), primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey(_USER, ondelete="CASCADE"), primary_key=True),
        sa.Column("role", sa.String(16), nullable=False),
        _at("joined_at"),
        sa.Column("digest", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("calendar_token", sa.String(64), nullable=False, unique=True),
    )
    op.create_index("ix_group_members_user", "group_members", ["user_id"])
    op.create_table(
        "group_invitations",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("group_id", sa.Integer, sa.ForeignKey(_GROUP, ondelete="CASCADE"), nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("invited_by", sa.Integer, sa.ForeignKey(_USER, ondelete="SET NULL")),
        _at("created_at"),
        _at("expires_at"),
        _at("used_at", nullable=True),
        sa.Column("used_by", sa.Integer, sa.ForeignKey(_USER, ondelete="SET NULL")),
    )
    op.create_index("ix_group_invitations_group", "group_invitations", ["group_id"])
    op.create_table(
        "group_queue",
        sa.Column("group_id", sa.Integer, sa.ForeignKey(_GROUP, ondelete="CASCADE"), primary_key=True),
        sa.Column("paper_id", sa.String(64), sa.ForeignKey(_PAPER, ondelete="CASCADE"), primary_key=True),
        sa.Column("added_by", sa.Integer, sa.ForeignKey(_USER, ondelete="SET NULL")),
        sa.Column("note", sa.Text, nullable=False, server_default=""),
        _at("added_at"),
    )
    op.create_table(
        "group_votes",
        sa.Column("group_id", sa.Integer, sa.ForeignKey(_GROUP, ondelete="CASCADE"), primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey(_USER, ondelete="CASCADE"), primary_key=True),
        sa.Column("paper_id", sa.String(64), sa.ForeignKey(_PAPER, ondelete="CASCADE"), nullable=False),
        _at("voted_at"),
    )
    op.create_index("ix_group_votes_paper", "group_votes", ["group_id", "paper_id"])
    op.create_table(
        "group_sessions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("group_id", sa.Integer, sa.ForeignKey(_GROUP, ondelete="CASCADE"), nullable=False),
        _at("starts_at"),
        sa.Column("presenter_id", sa.Integer, sa.ForeignKey(_USER, ondelete="SET NULL")),
        sa.Column("paper_id", sa.String(64), sa.ForeignKey(_PAPER, ondelete="CASCADE"), nullable=False),
        sa.Column("notes", sa.Text, nullable=False, server_default=""),
        _at("notes_updated_at", nullable=True),
        sa.Column("notes_updated_by", sa.Integer, sa.ForeignKey(_USER, ondelete="SET NULL")),
        _at("created_at"),
    )
    op.create_index("ix_group_sessions_group_start", "group_sessions", ["group_id", "starts_at"])
    op.create_table(
        "group_searches",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("group_id", sa.Integer, sa.ForeignKey(_GROUP, ondelete="CASCADE"), nullable=False),
        sa.Column("query", sa.String(300), nullable=False),
        sa.Column("created_by", sa.Integer, sa.ForeignKey(_USER, ondelete="SET NULL")),
        _at("created_at"),
    )
    op.create_index("ix_group_searches_group", "group_searches", ["group_id"])
    for table, owner in (("reader_mutes", ("user_id", _USER)), ("group_mutes", ("group_id", _GROUP))):
        op.create_table(
            table,
            sa.Column(owner[0], sa.Integer, sa.ForeignKey(owner[1], ondelete="CASCADE"), primary_key=True),
            sa.Column("kind", sa.String(16), primary_key=True),
            sa.Column("key", sa.String(300), primary_key=True),
            sa.Column("value", sa.String(200), nullable=False),
            _at("created_at"),
        )


def downgrade() -> None:
    op.drop_table("group_mutes")
    op.drop_table("reader_mutes")
    op.drop_index("ix_group_searches_group", "group_searches")
    op.drop_table("group_searches")
    op.drop_index("ix_group_sessions_group_start", "group_sessions")
    op.drop_table("group_sessions")
    op.drop_index("ix_group_votes_paper", "group_votes")
    op.drop_table("group_votes")
    op.drop_table("group_queue")
    op.drop_index("ix_group_invitations_group", "group_invitations")
    op.drop_table("group_invitations")
    op.drop_index("ix_group_members_user", "group_members")
    op.drop_table("group_members")
    op.drop_table("groups")
