"""Tables for people: users, their sessions, API tokens and one-time links, rate limits, moderation.

Every per-person table elsewhere (library, community, digests) refers to ``users.id``. Secrets are
never stored: sessions, tokens and links are kept as SHA-256 hex digests of what the person holds.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
)

from .columns import UtcDateTime
from .schema import metadata

__all__ = ["api_tokens", "hidden_papers", "one_time_links", "rate_limit_hits", "sessions", "users"]

users = Table(
    "users",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("email", String(320), nullable=False, unique=True),  # stored lower-cased
    Column("display_name", String(100)),
    Column("password_hash", Text),  # argon2; NULL for people who only use sign-in links
    Column("email_verified_at", UtcDateTime()),
    Column("role", String(16), nullable=False, server_default="user"),  # "user" | "admin"
    Column("hidden_at", UtcDateTime()),  # hidden by an admin
    Column("created_at", UtcDateTime(), nullable=False),
    Index("ix_users_role", "role"),
)

sessions = Table(
    "sessions",
    metadata,
    Column("id_hash", String(64), primary_key=True),  # sha256 hex of the cookie value
    Column("user_id", Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("last_seen_at", UtcDateTime(), nullable=False),
    Column("expires_at", UtcDateTime(), nullable=False),
    Index("ix_sessions_user_id", "user_id"),
    Index("ix_sessions_expires_at", "expires_at"),
)

api_tokens = Table(
    "api_tokens",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("user_id", Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(100), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),  # sha256 hex of the token
    Column("prefix", String(16), nullable=False),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("last_used_at", UtcDateTime()),
    Index("ix_api_tokens_user_id", "user_id"),
)

one_time_links = Table(
    "one_time_links",
    metadata,
    Column("token_hash", String(64), primary_key=True),  # sha256 hex of the token in the mailed link
    Column("user_id", Integer, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("purpose", String(16), nullable=False),  # verify | signin | reset | delete
    Column("created_at", UtcDateTime(), nullable=False),
    Column("expires_at", UtcDateTime(), nullable=False),
    Column("used_at", UtcDateTime()),
    Index("ix_one_time_links_user_purpose", "user_id", "purpose"),
    Index("ix_one_time_links_expires_at", "expires_at"),
)

# A sliding-window log: one row per counted attempt, in the database so that every worker process
# (and every host on PostgreSQL) shares the same counts.
rate_limit_hits = Table(
    "rate_limit_hits",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("bucket", String(100), nullable=False),  # e.g. "signin:ip:<keyed hash>"
    Column("at", Float, nullable=False),  # seconds since the epoch
    Index("ix_rate_limit_hits_bucket_at", "bucket", "at"),
    Index("ix_rate_limit_hits_at", "at"),
)

hidden_papers = Table(
    "hidden_papers",
    metadata,
    Column("paper_id", String(64), ForeignKey("papers.id", ondelete="CASCADE"), primary_key=True),
    Column("hidden_by", Integer, ForeignKey("users.id", ondelete="SET NULL")),
    Column("reason", String(500), nullable=False, server_default=""),
    Column("hidden_at", UtcDateTime(), nullable=False),
)
