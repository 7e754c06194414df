"""Table definitions, written once for SQLite and PostgreSQL alike (portable SQLAlchemy types only).

Migrations in ``migrations/versions`` create exactly these tables; a test checks they agree.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Column,
    Date,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
)

from .columns import UtcDateTime

metadata = MetaData()

papers = Table(
    "papers",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("version", Integer),
    Column("title", Text, nullable=False),
    Column("abstract", Text, nullable=False),
    Column("authors", JSON, nullable=False),
    Column("categories", JSON, nullable=False),
    Column("primary_category", String(32)),
    Column("published", UtcDateTime()),
    Column("updated", UtcDateTime()),
    Column("comment", Text),
    Column("journal_ref", Text),
    Column("doi", String(500)),
    Column("license", String(500)),
    Column("github_repo", String(500)),
    Column("github_stars", Integer),
    Column("project_page", Text),
    Column("upvotes", Integer),
    Column("num_comments", Integer),
    Column("organization", String(500)),
    Column("ai_summary", Text),
    Column("ai_keywords", JSON, nullable=False),
    Column("sources", JSON, nullable=False),
    Column("content_hash", String(32), nullable=False),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("modified_at", UtcDateTime(), nullable=False),
    # the one-line summary extracted from the abstract and "<content_hash>/<rule>" it was chosen for
    # (0020_paper_summaries): written by the sentence pass only, never by ingest
    Column("summary_line", Text),
    Column("summary_key", String(80)),
    Index("ix_papers_published", "published"),
    Index("ix_papers_primary_category", "primary_category"),
    Index("ix_papers_modified_at", "modified_at"),
    Index("ix_papers_published_id", "published", "id"),  # keyset paging newest first (0004_feed)
)

listings = Table(
    "listings",
    metadata,
    Column("day", Date, primary_key=True),
    Column("source", String(32), primary_key=True),
    Column("paper_id", String(64), ForeignKey("papers.id", ondelete="CASCADE"), primary_key=True),
    Column("upvotes", Integer),
    Column("rank", Integer),
    Index("ix_listings_paper_id", "paper_id"),
)

# Ledger of raw source records already applied: (source, the record's own key) -> fingerprint of its
# bytes. A re-import skips records whose fingerprint is unchanged without parsing or merging them again.
source_records = Table(
    "source_records",
    metadata,
    Column("source", String(200), primary_key=True),
    Column("record_key", String(200), primary_key=True),
    Column("paper_id", String(64), ForeignKey("papers.id", ondelete="CASCADE"), nullable=False),
    Column("fingerprint", String(32), nullable=False),
    Index("ix_source_records_paper_id", "paper_id"),
)

checkpoints = Table(
    "checkpoints",
    metadata,
    Column("name", String(200), primary_key=True),
    Column("value", Text, nullable=False),
    Column("updated_at", UtcDateTime(), nullable=False),
)

embeddings = Table(
    "embeddings",
    metadata,
    Column("paper_id", String(64), ForeignKey("papers.id", ondelete="CASCADE"), primary_key=True),
    Column("model_id", String(200), nullable=False),
    Column("content_hash", String(32), nullable=False),
    Column("vector", LargeBinary, nullable=False),  # float32, little-endian, L2-normalised
    Column("created_at", UtcDateTime(), nullable=False),
    Index("ix_embeddings_model_paper", "model_id", "paper_id"),  # pages of one model in id order
)
