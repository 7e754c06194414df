"""topics: the current topic generation, its papers, weekly counts, builds and lineage (issue #17).

Revision ID: 0011_topics
Revises: 0010_citations
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0011_topics"
down_revision = "0010_citations"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "topic_builds",
        sa.Column("generation", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("built_at", _TS, nullable=False),
        sa.Column("model_id", sa.String(200), nullable=False),
        sa.Column("method", sa.Text, nullable=False),
        sa.Column("papers", sa.Integer, nullable=False),
        sa.Column("topics", sa.Integer, nullable=False),
        sa.Column("noise", sa.Integer, nullable=False),
        sa.Column("next_topic_id", sa.Integer, nullable=False),
    )
    op.create_table(
        "topics",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("label", sa.Text, nullable=False),
        sa.Column("words", sa.JSON, nullable=False),
        sa.Column("size", sa.Integer, nullable=False),
        sa.Column("representatives", sa.JSON, nullable=False),
        sa.Column("centroid", sa.LargeBinary, nullable=False),
        sa.Column("x", sa.Float, nullable=False),
        sa.Column("y", sa.Float, nullable=False),
    )
    op.create_table(
        "topic_papers",
        sa.Column(
            "paper_id", sa.String(64), sa.ForeignKey("papers.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("topic_id", sa.Integer, nullable=False),
        sa.Column("similarity", sa.Float, nullable=False),
        sa.Column("x", sa.Float, nullable=False),
        sa.Column("y", sa.Float, nullable=False),
    )
    op.create_index("ix_topic_papers_topic", "topic_papers", ["topic_id", "similarity"])
    op.create_table(
        "topic_weeks",
        sa.Column("topic_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("week", sa.Date, primary_key=True),
        sa.Column("papers", sa.Integer, nullable=False),
        sa.Column("upvotes", sa.Integer, nullable=False),
    )
    op.create_table(
        "topic_lineage",
        sa.Column("generation", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("old_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("new_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("share", sa.Float, nullable=False),
    )
    op.create_index("ix_topic_lineage_old", "topic_lineage", ["old_id", "generation"])


def downgrade() -> None:
    op.drop_index("ix_topic_lineage_old", "topic_lineage")
    op.drop_table("topic_lineage")
    op.drop_table("topic_weeks")
    op.drop_index("ix_topic_papers_topic", "topic_papers")
    op.drop_table("topic_papers")
    op.drop_table("topics")
    op.drop_table("topic_builds")
