"""Embeddings: one vector per paper for the current model, keyed by the content hash it was made from.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "embeddings",
        sa.Column(
            "paper_id", sa.String(64), sa.ForeignKey("papers.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("model_id", sa.String(200), nullable=False),
        sa.Column("content_hash", sa.String(32), nullable=False),
        sa.Column("vector", sa.LargeBinary, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_embeddings_model_id", "embeddings", ["model_id"])


def downgrade() -> None:
    op.drop_index("ix_embeddings_model_id", "embeddings")
    op.drop_table("embeddings")
