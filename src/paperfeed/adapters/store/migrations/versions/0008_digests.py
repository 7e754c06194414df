"""digests: the tables of that work (each work fills in its own revision; the chain is fixed up front).

Revision ID: 0008_digests
Revises: 0007_community
Create Date: 2026-11-22
"""

revision = "0008_digests"
down_revision = "0007_community"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
