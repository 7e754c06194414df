"""Embeddings indexed by (model_id, paper_id) instead of model_id alone.

Every full read of a model's vectors (a faiss build, a node's cold start, a topic build) pages through
them by paper id: ``model_id = ? AND paper_id > ? ORDER BY paper_id LIMIT 4096``. With an index on
``model_id`` alone, SQLite found the model's rows and sorted all that were left for every page (a temporary
B-tree), so a read of n vectors cost about n²/4096 row visits: 33 s at 200k papers, and a 1M topic build
was still reading after 7 minutes. The composite index returns each page in order from where the last one
stopped, and serves every lookup by ``model_id`` the old index served.

Revision ID: 0015_embeddings_model_paper
Revises: 0014_source_counts
Create Date: 2026-11-24
"""

from alembic import op

revision = "0015_embeddings_model_paper"
down_revision = "0014_source_counts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_embeddings_model_paper", "embeddings", ["model_id", "paper_id"])
    op.drop_index("ix_embeddings_model_id", table_name="embeddings")


def downgrade() -> None:
    op.create_index("ix_embeddings_model_id", "embeddings", ["model_id"])
    op.drop_index("ix_embeddings_model_paper", table_name="embeddings")
