"""Tables for people: users (and, from the accounts work, their sessions, tokens and one-time links).

Every per-person table elsewhere (library, community, digests) refers to ``users.id``.
"""

from __future__ import annotations

from sqlalchemy import Column, DateTime, Index, Integer, String, Table, Text

from .schema import metadata

users = Table(
    "users",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("email", String(320), nullable=False, unique=True),  # stored lower-cased
    Column("display_name", String(100)),
    Column("password_hash", Text),  # argon2; NULL for people who only use sign-in links
    Column("email_verified_at", DateTime(timezone=True)),
    Column("role", String(16), nullable=False, server_default="user"),  # "user" | "admin"
    Column("hidden_at", DateTime(timezone=True)),  # hidden by an admin
    Column("created_at", DateTime(timezone=True), nullable=False),
    Index("ix_users_role", "role"),
)
