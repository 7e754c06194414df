"""Accounts: users, sessions, API tokens, one-time links, rate-limit log, hidden papers.

Revision ID: 0005_accounts
Revises: 0004_feed
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_accounts"
down_revision = "0004_feed"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("email", sa.String(320), nullable=False, unique=True),
        sa.Column("display_name", sa.String(100)),
        sa.Column("password_hash", sa.Text),
        sa.Column("email_verified_at", sa.DateTime(timezone=True)),
        sa.Column("role", sa.String(16), nullable=False, server_default="user"),
        sa.Column("hidden_at", sa.DateTime(timezone=True)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_users_role", "users", ["role"])
    op.create_table(
        "sessions",
        sa.Column("id_hash", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_sessions_user_id", "sessions", ["user_id"])
    op.create_index("ix_sessions_expires_at", "sessions", ["expires_at"])
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True)),
    )
    op.create_index("ix_api_tokens_user_id", "api_tokens", ["user_id"])
    op.create_table(
        "one_time_links",
        sa.Column("token_hash", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("purpose", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True)),
    )
    op.create_index("ix_one_time_links_user_purpose", "one_time_links", ["user_id", "purpose"])
    op.create_index("ix_one_time_links_expires_at", "one_time_links", ["expires_at"])
    op.create_table(
        "rate_limit_hits",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True
        ),
        sa.Column("bucket", sa.String(100), nullable=False),
        sa.Column("at", sa.Float, nullable=False),
    )
    op.create_index("ix_rate_limit_hits_bucket_at", "rate_limit_hits", ["bucket", "at"])
    op.create_index("ix_rate_limit_hits_at", "rate_limit_hits", ["at"])
    op.create_table(
        "hidden_papers",
        sa.Column(
            "paper_id", sa.String(64), sa.ForeignKey("papers.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("hidden_by", sa.Integer, sa.ForeignKey("users.id", ondelete="SET NULL")),
        sa.Column("reason", sa.String(500), nullable=False, server_default=""),
        sa.Column("hidden_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("hidden_papers")
    op.drop_index("ix_rate_limit_hits_at", "rate_limit_hits")
    op.drop_index("ix_rate_limit_hits_bucket_at", "rate_limit_hits")
    op.drop_table("rate_limit_hits")
    op.drop_index("ix_one_time_links_expires_at", "one_time_links")
    op.drop_index("ix_one_time_links_user_purpose", "one_time_links")
    op.drop_table("one_time_links")
    op.drop_index("ix_api_tokens_user_id", "api_tokens")
    op.drop_table("api_tokens")
    op.drop_index("ix_sessions_expires_at", "sessions")
    op.drop_index("ix_sessions_user_id", "sessions")
    op.drop_table("sessions")
    op.drop_index("ix_users_role", "users")
    op.drop_table("users")
