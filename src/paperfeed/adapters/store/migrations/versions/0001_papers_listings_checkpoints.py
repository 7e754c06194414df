"""Papers, daily listings, source checkpoints and the ledger of records already applied.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "papers",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("version", sa.Integer),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("abstract", sa.Text, nullable=False),
        sa.Column("authors", sa.JSON, nullable=False),
        sa.Column("categories", sa.JSON, nullable=False),
        sa.Column("primary_category", sa.String(32)),
        sa.Column("published", sa.DateTime(timezone=True)),
        sa.Column("updated", sa.DateTime(timezone=True)),
        sa.Column("comment", sa.Text),
        sa.Column("journal_ref", sa.Text),
        sa.Column("doi", sa.String(500)),
        sa.Column("license", sa.String(500)),
        sa.Column("github_repo", sa.String(500)),
        sa.Column("github_stars", sa.Integer),
        sa.Column("project_page", sa.Text),
        sa.Column("upvotes", sa.Integer),
        sa.Column("num_comments", sa.Integer),
        sa.Column("organization", sa.String(500)),
        sa.Column("ai_summary", sa.Text),
        sa.Column("ai_keywords", sa.JSON, nullable=False),
        sa.Column("sources", sa.JSON, nullable=False),
        sa.Column("content_hash", sa.String(32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("modified_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_papers_published", "papers", ["published"])
    op.create_index("ix_papers_primary_category", "papers", ["primary_category"])
    op.create_index("ix_papers_modified_at", "papers", ["modified_at"])
    op.create_table(
        "listings",
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("source", sa.String(32), primary_key=True),
        sa.Column(
            "paper_id", sa.String(64), sa.ForeignKey("papers.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("upvotes", sa.Integer),
        sa.Column("rank", sa.Integer),
    )
    op.create_index("ix_listings_paper_id", "listings", ["paper_id"])
    op.create_table(
        "source_records",
        sa.Column("source", sa.String(200), primary_key=True),
        sa.Column("record_key", sa.String(200), primary_key=True),
        sa.Column("paper_id", sa.String(64), sa.ForeignKey("papers.id", ondelete="CASCADE"), nullable=False),
        sa.Column("fingerprint", sa.String(32), nullable=False),
    )
    op.create_index("ix_source_records_paper_id", "source_records", ["paper_id"])
    op.create_table(
        "checkpoints",
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("checkpoints")
    op.drop_index("ix_source_records_paper_id", "source_records")
    op.drop_table("source_records")
    op.drop_index("ix_listings_paper_id", "listings")
    op.drop_table("listings")
    op.drop_index("ix_papers_modified_at", "papers")
    op.drop_index("ix_papers_primary_category", "papers")
    op.drop_index("ix_papers_published", "papers")
    op.drop_table("papers")
