"""library: the tables of that work (each work fills in its own revision; the chain is fixed up front).

Revision ID: 0006_library
Revises: 0005_accounts
Create Date: 2026-11-22
"""

revision = "0006_library"
down_revision = "0005_accounts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
