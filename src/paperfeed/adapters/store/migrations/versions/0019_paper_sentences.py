"""paper_sentences (issue #33, parts 4-5): each abstract's sentences, their roles and vectors.

See ``schema_sentences.py``. Filled in the background by the sentence indexer (``paperfeed index``).

Revision ID: 0019_paper_sentences
Revises: 0018_group_digests
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0019_paper_sentences"
down_revision = "0018_group_digests"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "paper_sentences",
        sa.Column(
            "paper_id", sa.String(64), sa.ForeignKey("papers.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("model_id", sa.String(200), nullable=False),
        sa.Column("role_model", sa.String(100), nullable=False),
        sa.Column("content_hash", sa.String(32), nullable=False),
        sa.Column("count", sa.SmallInteger, nullable=False),
        sa.Column("spans", sa.LargeBinary, nullable=False),
        sa.Column("probabilities", sa.LargeBinary, nullable=False),
        sa.Column("vectors", sa.LargeBinary, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_paper_sentences_model_paper", "paper_sentences", ["model_id", "paper_id"])


def downgrade() -> None:
    op.drop_index("ix_paper_sentences_model_paper", "paper_sentences")
    op.drop_table("paper_sentences")
