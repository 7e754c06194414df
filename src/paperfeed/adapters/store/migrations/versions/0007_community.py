"""community: the tables of that work (each work fills in its own revision; the chain is fixed up front).

Revision ID: 0007_community
Revises: 0006_library
Create Date: 2026-11-22
"""

revision = "0007_community"
down_revision = "0006_library"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
