"""Tables for digest mail (on the shared ``schema.metadata``); the jobs' tables are in ``schema_jobs``.

- ``digest_subscriptions``: one row per address (with or without an account), its preferences.
- ``digests``: the send ledger, one row per (subscription, period) — the idempotency key — or, for a
  reading group's weekly digest, per (group, member, ISO week), holding the
  paper ids fixed at composition time and the delivery state (``domain.digest.DigestStatus``).
- ``digest_sent_papers``: every paper a subscription was ever sent, so no paper comes twice.
- ``mail_bounces``: addresses a server refused permanently (5xx); nothing is mailed to them any more.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from .columns import UtcDateTime
from .schema import metadata
from .schema_accounts import users

__all__ = [
    "digest_sent_papers",
    "digest_subscriptions",
    "digests",
    "mail_bounces",
    "metadata",
]

digest_subscriptions = Table(
    "digest_subscriptions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("email", String(320), nullable=False, unique=True),  # lower-cased
    Column("user_id", Integer, ForeignKey(users.c.id, ondelete="SET NULL")),
    Column("status", String(16), nullable=False),  # pending | active | unsubscribed
    Column("cadence", String(16), nullable=False),  # daily | weekdays | weekly
    Column("weekday", Integer, nullable=False),  # weekly: 0 = Monday
    Column("send_hour", Integer, nullable=False),  # local hour
    Column("timezone", String(64), nullable=False),  # IANA name
    Column("sections", JSON, nullable=False),  # ordered list of section names
    Column("categories", JSON, nullable=False),
    Column("max_items", Integer, nullable=False),
    Column("confirm_nonce", String(32)),  # the current confirmation link's nonce
    Column("confirm_sent_at", UtcDateTime()),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("confirmed_at", UtcDateTime()),
    Column("unsubscribed_at", UtcDateTime()),
    Column("updated_at", UtcDateTime(), nullable=False),
    Index("ix_digest_subscriptions_status", "status"),
    Index("ix_digest_subscriptions_user_id", "user_id"),
)

digests = Table(
    "digests",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column(
        "subscription_id",
        Integer,
        ForeignKey(digest_subscriptions.c.id, ondelete="CASCADE"),
    ),  # NULL for a reading group's digest (then group_id and user_id say whose)
    Column("group_id", Integer, ForeignKey("groups.id", name="fk_digests_group", ondelete="CASCADE")),
    Column("user_id", Integer, ForeignKey(users.c.id, name="fk_digests_user", ondelete="CASCADE")),
    Column("period", String(16), nullable=False),  # "2025-03-20" or "2025-W12"
    Column("slot", UtcDateTime(), nullable=False),  # the scheduled send moment
    Column("email", String(320), nullable=False),
    Column("status", String(16), nullable=False),
    Column("content", JSON, nullable=False),  # Digest.to_json(): sections of paper ids and reasons
    Column("paper_count", Integer, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_attempt_at", UtcDateTime()),
    Column("last_error", Text),
    Column("composed_at", UtcDateTime(), nullable=False),
    Column("handed_at", UtcDateTime()),
    Column("sent_at", UtcDateTime()),
    Column("updated_at", UtcDateTime(), nullable=False),
    UniqueConstraint("subscription_id", "period", name="uq_digests_subscription_period"),
    UniqueConstraint("group_id", "user_id", "period", name="uq_digests_group_member_period"),
    Index("ix_digests_status", "status", "next_attempt_at"),
    Index("ix_digests_period", "period"),
)

digest_sent_papers = Table(
    "digest_sent_papers",
    metadata,
    Column(
        "subscription_id",
        Integer,
        ForeignKey(digest_subscriptions.c.id, ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("paper_id", String(64), primary_key=True),
    Column("digest_id", Integer, ForeignKey(digests.c.id, ondelete="CASCADE"), nullable=False),
    Index("ix_digest_sent_papers_digest_id", "digest_id"),
)

mail_bounces = Table(
    "mail_bounces",
    metadata,
    Column("email", String(320), primary_key=True),  # lower-cased
    Column("reason", Text, nullable=False),
    Column("bounced_at", UtcDateTime(), nullable=False),
)
