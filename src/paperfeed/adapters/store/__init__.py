"""The relational store (SQLite by default, PostgreSQL by URL) behind SQLAlchemy Core."""

# Importing every table module registers its tables on the one shared ``schema.metadata``.
from . import (  # noqa: F401
    schema_accounts,
    schema_citations,
    schema_claims,
    schema_community,
    schema_digests,
    schema_groups,
    schema_jobs,
    schema_library,
    schema_sentences,
    schema_topics,
)
from .sql_store import SqlPaperStore, open_store

__all__ = ["SqlPaperStore", "open_store"]
