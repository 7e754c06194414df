"""Tables of several indexing processes sharing one backlog (``domain/embedding_claims.py``).

- ``embedding_claims``: one row per paper some process is embedding now: who holds it, in which of its
  batches, until when. Rows live only while a batch is in flight (they end with its commit), so the table
  holds a few hundred rows per worker at most.
- ``embedding_workers``: one row per indexing process (its holder), with the batches and papers it
  committed, counted in the transaction that commits them: the ledger an operator reads
  (``paperfeed jobs status``) and the proof that no batch is committed twice.
"""

from __future__ import annotations

from sqlalchemy import Column, Index, Integer, String, Table

from .columns import UtcDateTime
from .schema import metadata

__all__ = ["embedding_claims", "embedding_workers", "metadata"]

embedding_claims = Table(
    "embedding_claims",
    metadata,
    Column("paper_id", String(64), primary_key=True),  # no foreign key: a claim is transient
    Column("holder", String(200), nullable=False),  # host:pid:start:random
    Column("batch", Integer, nullable=False),  # the holder's own batch number
    Column("model_id", String(200), nullable=False),
    Column("claimed_at", UtcDateTime(), nullable=False),
    Column("expires_at", UtcDateTime(), nullable=False),
    Index("ix_embedding_claims_holder", "holder"),
    Index("ix_embedding_claims_expires_at", "expires_at"),
)

embedding_workers = Table(
    "embedding_workers",
    metadata,
    Column("holder", String(200), primary_key=True),
    Column("model_id", String(200), nullable=False),
    Column("state", String(16), nullable=False),  # embedding | finished | stopped | failed
    Column("started_at", UtcDateTime(), nullable=False),
    Column("seen_at", UtcDateTime(), nullable=False),
    Column("batches", Integer, nullable=False),
    Column("papers", Integer, nullable=False),
    Index("ix_embedding_workers_seen_at", "seen_at"),
)
