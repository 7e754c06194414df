"""Column types and value readers shared by every table and query of the store.

SQLite keeps no time zone: a ``DateTime(timezone=True)`` column hands back naive datetimes there (the UTC
moments that were written), while PostgreSQL hands back the session's zone. :class:`UtcDateTime` makes
both dialects store and return aware UTC datetimes, so no query has to repair its results.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import DateTime
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

__all__ = ["UtcDateTime", "as_date", "as_utc"]


def as_utc(value: datetime) -> datetime:
    """``value`` as an aware UTC datetime; a naive one is taken to be UTC (what SQLite stores)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class UtcDateTime(TypeDecorator[datetime]):
    """``TIMESTAMP WITH TIME ZONE`` (``DateTime(timezone=True)``, the same DDL) read back as aware UTC.

    A naive value read or written is taken to be UTC (what SQLite stores); an aware one is converted to
    UTC before SQLite, which drops the offset, formats it.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None or value.tzinfo is None:
            return value
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else as_utc(value)


def as_date(value: Any) -> date:
    """A day from a DATE column or an aggregate over one: ``date`` from PostgreSQL, but possibly text from
    SQLite (where an aggregate's type is not always carried through)."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value)[:10])
