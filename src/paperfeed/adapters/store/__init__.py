"""The relational store (SQLite by default, PostgreSQL by URL) behind SQLAlchemy Core."""

# Importing every table module registers its tables on the one shared ``schema.metadata``.
from . import schema_accounts, schema_community, schema_digests, schema_jobs, schema_library  # noqa: F401
from .sql_store import SqlPaperStore, open_store

__all__ = ["SqlPaperStore", "open_store"]
