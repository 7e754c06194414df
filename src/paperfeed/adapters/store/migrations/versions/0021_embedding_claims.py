"""embedding_claims / embedding_workers (issue #39 item 7): several indexing processes on one backlog.

See ``schema_claims.py``: claims on the papers a process is embedding now, with an expiry, and the ledger
of what each process committed.

Revision ID: 0021_embedding_claims
Revises: 0020_paper_summaries
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = "0021_embedding_claims"
down_revision = "0020_paper_summaries"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "embedding_claims",
        sa.Column("paper_id", sa.String(64), primary_key=True),
        sa.Column("holder", sa.String(200), nullable=False),
        sa.Column("batch", sa.Integer, nullable=False),
        sa.Column("model_id", sa.String(200), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_embedding_claims_holder", "embedding_claims", ["holder"])
    op.create_index("ix_embedding_claims_expires_at", "embedding_claims", ["expires_at"])
    op.create_table(
        "embedding_workers",
        sa.Column("holder", sa.String(200), primary_key=True),
        sa.Column("model_id", sa.String(200), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("batches", sa.Integer, nullable=False),
        sa.Column("papers", sa.Integer, nullable=False),
    )
    op.create_index("ix_embedding_workers_seen_at", "embedding_workers", ["seen_at"])


def downgrade() -> None:
    op.drop_index("ix_embedding_workers_seen_at", "embedding_workers")
    op.drop_table("embedding_workers")
    op.drop_index("ix_embedding_claims_expires_at", "embedding_claims")
    op.drop_index("ix_embedding_claims_holder", "embedding_claims")
    op.drop_table("embedding_claims")
