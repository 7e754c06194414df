"""digests: subscriptions, the send ledger, sent papers, bounced addresses, job runs and job leases.

Revision ID: 0008_digests
Revises: 0007_community
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0008_digests"
down_revision = "0007_community"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "digest_subscriptions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("email", sa.String(320), nullable=False, unique=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="SET NULL")),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("cadence", sa.String(16), nullable=False),
        sa.Column("weekday", sa.Integer, nullable=False),
        sa.Column("send_hour", sa.Integer, nullable=False),
        sa.Column("timezone", sa.String(64), nullable=False),
        sa.Column("sections", sa.JSON, nullable=False),
        sa.Column("categories", sa.JSON, nullable=False),
        sa.Column("max_items", sa.Integer, nullable=False),
        sa.Column("confirm_nonce", sa.String(32)),
        sa.Column("confirm_sent_at", _TS),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("confirmed_at", _TS),
        sa.Column("unsubscribed_at", _TS),
        sa.Column("updated_at", _TS, nullable=False),
    )
    op.create_index("ix_digest_subscriptions_status", "digest_subscriptions", ["status"])
    op.create_index("ix_digest_subscriptions_user_id", "digest_subscriptions", ["user_id"])
    op.create_table(
        "digests",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "subscription_id",
            sa.Integer,
            sa.ForeignKey("digest_subscriptions.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("period", sa.String(16), nullable=False),
        sa.Column("slot", _TS, nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("content", sa.JSON, nullable=False),
        sa.Column("paper_count", sa.Integer, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("next_attempt_at", _TS),
        sa.Column("last_error", sa.Text),
        sa.Column("composed_at", _TS, nullable=False),
        sa.Column("handed_at", _TS),
        sa.Column("sent_at", _TS),
        sa.Column("updated_at", _TS, nullable=False),
        sa.UniqueConstraint("subscription_id", "period", name="uq_digests_subscription_period"),
    )
    op.create_index("ix_digests_status", "digests", ["status", "next_attempt_at"])
    op.create_index("ix_digests_period", "digests", ["period"])
    op.create_table(
        "digest_sent_papers",
        sa.Column(
            "subscription_id",
            sa.Integer,
            sa.ForeignKey("digest_subscriptions.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("paper_id", sa.String(64), primary_key=True),
        sa.Column("digest_id", sa.Integer, sa.ForeignKey("digests.id", ondelete="CASCADE"), nullable=False),
    )
    op.create_index("ix_digest_sent_papers_digest_id", "digest_sent_papers", ["digest_id"])
    op.create_table(
        "mail_bounces",
        sa.Column("email", sa.String(320), primary_key=True),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("bounced_at", _TS, nullable=False),
    )
    op.create_table(
        "job_runs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("job", sa.String(32), nullable=False),
        sa.Column("slot", _TS),
        sa.Column("trigger", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("holder", sa.String(200), nullable=False),
        sa.Column("started_at", _TS, nullable=False),
        sa.Column("finished_at", _TS),
        sa.Column("steps", sa.JSON, nullable=False),
        sa.Column("error", sa.Text),
    )
    op.create_index("ix_job_runs_job_slot", "job_runs", ["job", "slot"])
    op.create_index("ix_job_runs_started_at", "job_runs", ["started_at"])
    op.create_table(
        "job_leases",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("holder", sa.String(200), nullable=False),
        sa.Column("acquired_at", _TS, nullable=False),
        sa.Column("expires_at", _TS, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("job_leases")
    op.drop_index("ix_job_runs_started_at", "job_runs")
    op.drop_index("ix_job_runs_job_slot", "job_runs")
    op.drop_table("job_runs")
    op.drop_table("mail_bounces")
    op.drop_index("ix_digest_sent_papers_digest_id", "digest_sent_papers")
    op.drop_table("digest_sent_papers")
    op.drop_index("ix_digests_period", "digests")
    op.drop_index("ix_digests_status", "digests")
    op.drop_table("digests")
    op.drop_index("ix_digest_subscriptions_user_id", "digest_subscriptions")
    op.drop_index("ix_digest_subscriptions_status", "digest_subscriptions")
    op.drop_table("digest_subscriptions")
