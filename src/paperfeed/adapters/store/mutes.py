"""Mute rules of readers and groups on SQLAlchemy Core; implements ``domain.mutes.MuteRecords``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Table, delete, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine

from paperfeed.domain.mutes import MuteKind, MuteRule

from .schema_groups import group_mutes, reader_mutes

__all__ = ["SqlMuteStore"]


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

    def add(self, owner: tuple[str, int], rule: MuteRule, now: datetime) -> bool:
        """Add a rule; False when the same one is there already."""
        table, _ = self._table(owner)
        column = "user_id" if owner[0] == "reader" else "group_id"
        stmt = self._insert(table).values(
            {column: owner[1], "kind": rule.kind, "key": rule.key, "value": rule.value, "created_at": now}
        )
        stmt = stmt.on_conflict_do_nothing(index_elements=[table.c[column], table.c.kind, table.c.key])
        with self.engine.begin() as conn:
            return conn.execute(stmt.returning(table.c.key)).first() is not None

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
