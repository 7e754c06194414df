"""Mute rules of readers and groups on SQLAlchemy Core; implements ``domain.mutes.MuteRecords``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Table, delete, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine

from paperfeed.domain.mutes import MuteKind, MuteRule

from .schema_accounts import users
from .schema_groups import group_mutes, groups, reader_mutes

__all__ = ["SqlMuteStore"]


class _Full(Exception):
    """Rolls an add over the cap back."""


class SqlMuteStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._insert: Any = postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert

    @staticmethod
    def _table(owner: tuple[str, int]) -> tuple[Table, Any]:
        kind, owner_id = owner
        table = reader_mutes if kind == "reader" else group_mutes
        column = table.c.user_id if kind == "reader" else table.c.group_id
        return table, column == owner_id

    def rules(self, owner: tuple[str, int]) -> list[MuteRule]:
        table, mine = self._table(owner)
        query = select(table.c.kind, table.c.value, table.c.key, table.c.created_at).where(mine)
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(table.c.kind, table.c.key)).all()
        out: list[MuteRule] = []
        for r in rows:
            kind: MuteKind = r.kind if r.kind in ("author", "category", "word") else "word"
            out.append(MuteRule(kind, r.value, r.key, r.created_at))
        return out

    def add(self, owner: tuple[str, int], rule: MuteRule, now: datetime, *, cap: int) -> bool | None:
        """Add a rule; False when the same one is there already, None when the owner has ``cap`` rules.

        The cap is checked after the insert, in its transaction (as the community's per-reader caps):
        on SQLite the insert takes the database's write lock, so the count sees every earlier add; on
        PostgreSQL the owner's row (the reader's ``users`` row, the group's ``groups`` row) is locked
        first, which queues one owner's parallel adds. Over the cap the transaction rolls back."""
        table, mine = self._table(owner)
        column = "user_id" if owner[0] == "reader" else "group_id"
        stmt = self._insert(table).values(
            {column: owner[1], "kind": rule.kind, "key": rule.key, "value": rule.value, "created_at": now}
        )
        stmt = stmt.on_conflict_do_nothing(index_elements=[table.c[column], table.c.kind, table.c.key])
        try:
            with self.engine.begin() as conn:
                if conn.dialect.name != "sqlite":
                    holder = users if owner[0] == "reader" else groups
                    conn.execute(select(holder.c.id).where(holder.c.id == owner[1]).with_for_update())
                if conn.execute(stmt.returning(table.c.key)).first() is None:
                    return False
                if conn.execute(select(func.count()).select_from(table).where(mine)).scalar_one() > cap:
                    raise _Full
        except _Full:
            return None
        return True

    def remove(self, owner: tuple[str, int], kind: str, key: str) -> bool:
        table, mine = self._table(owner)
        with self.engine.begin() as conn:
            return bool(
                conn.execute(delete(table).where(mine, table.c.kind == kind, table.c.key == key)).rowcount
            )

    def count(self, owner: tuple[str, int]) -> int:
        table, mine = self._table(owner)
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(table).where(mine)).scalar_one())
