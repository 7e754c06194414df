"""Feeds: an index on papers (published, id) for the keyset-paged list of all papers, newest first.

``/api/papers?cursor=`` orders by ``published DESC, id DESC`` and seeks past the cursor's
``(published, id)``; with both columns in one index that is a single index range on SQLite and
PostgreSQL alike, at any depth. Day, week and month feeds need nothing new: ``listings`` is keyed
``(day, source, paper_id)``.

Revision ID: 0004_feed
Revises: 0003
Create Date: 2026-11-22
"""

from alembic import op

revision = "0004_feed"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_papers_published_id", "papers", ["published", "id"])


def downgrade() -> None:
    op.drop_index("ix_papers_published_id", "papers")
