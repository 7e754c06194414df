"""topics at two levels, and the topics a reader picked for "For you" (issue #17).

A coarse topic is a ``topics`` row with ``level`` 1; a fine topic (level 0) names its coarse topic in
``parent_id``. ``topic_picks`` holds the topics a reader chose as a cold start for recommendations.

Revision ID: 0012_topic_levels_picks
Revises: 0011_topics
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0012_topic_levels_picks"
down_revision = "0011_topics"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("topics") as batch:
        batch.add_column(sa.Column("level", sa.SmallInteger, nullable=False, server_default="0"))
        batch.add_column(sa.Column("parent_id", sa.Integer, nullable=True))
    op.create_index("ix_topics_parent", "topics", ["parent_id"])
    op.create_table(
        "topic_picks",
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("topic_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("picked_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("topic_picks")
    op.drop_index("ix_topics_parent", "topics")
    with op.batch_alter_table("topics") as batch:
        batch.drop_column("parent_id")
        batch.drop_column("level")
