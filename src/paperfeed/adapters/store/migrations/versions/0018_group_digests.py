"""group digests in the send ledger: a ``digests`` row is either a subscription's (as before) or a reading
group's weekly digest to one member (``group_id``, ``user_id``; no subscription), keyed by (group, member,
ISO week) so it is composed and sent exactly once (docs/digests.md, docs/groups.md).

Revision ID: 0018_group_digests
Revises: 0017_groups
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0018_group_digests"
down_revision = "0017_groups"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("digests") as batch:  # SQLite: the table is copied with the new columns
        batch.alter_column("subscription_id", existing_type=sa.Integer, nullable=True)
        batch.add_column(
            sa.Column(
                "group_id",
                sa.Integer,
                sa.ForeignKey("groups.id", name="fk_digests_group", ondelete="CASCADE"),
            )
        )
        batch.add_column(
            sa.Column(
                "user_id", sa.Integer, sa.ForeignKey("users.id", name="fk_digests_user", ondelete="CASCADE")
            )
        )
        batch.create_unique_constraint("uq_digests_group_member_period", ["group_id", "user_id", "period"])


def downgrade() -> None:
    op.execute("DELETE FROM digests WHERE group_id IS NOT NULL")
    with op.batch_alter_table("digests") as batch:
        batch.drop_constraint("uq_digests_group_member_period", type_="unique")
        batch.drop_constraint("fk_digests_user", type_="foreignkey")
        batch.drop_constraint("fk_digests_group", type_="foreignkey")
        batch.drop_column("user_id")
        batch.drop_column("group_id")
        batch.alter_column("subscription_id", existing_type=sa.Integer, nullable=False)
