"""The relational store (SQLite by default, PostgreSQL by URL) behind SQLAlchemy Core."""

from .sql_store import SqlPaperStore, open_store

__all__ = ["SqlPaperStore", "open_store"]
