"""Accounts: users (the accounts work adds sessions, API tokens and one-time links here).

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


def downgrade() -> None:
    op.drop_index("ix_users_role", "users")
    op.drop_table("users")
