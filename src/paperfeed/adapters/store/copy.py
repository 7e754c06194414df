"""Copy a whole store to another database (SQLite data folder → PostgreSQL), resumable and idempotent.

Every table of ``schema.metadata`` that the source has is copied in foreign-key order (so tables other
parts of paperfeed add are copied without this module knowing them), a keyset-paged batch at a time:

* each batch is one transaction on the target that upserts the rows (``ON CONFLICT (primary key) DO
  UPDATE``) and records how far that table got in the target's ``checkpoints`` (``copy:<table>``), so an
  interrupted copy resumes where it stopped and a repeated one rewrites the same rows, never duplicates;
* the checkpoints are removed once every table is done, so a later copy starts over (and brings the
  target up to date with whatever changed in the source);
* afterwards the target's sequences are moved past the copied ids, and on PostgreSQL the vector index is
  built from the copied embeddings (the keyword index follows by itself: a trigger fills
  ``papers.search_tsv`` as rows arrive).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import Column, Table, and_, func, inspect, or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from paperfeed.domain.store_admin import CopyProgress, CopySummary

from .schema import checkpoints, metadata

__all__ = ["CopySummary", "Progress", "copy_store"]

_PREFIX = "copy:"

Progress = CopyProgress


def _after(key: Sequence[Column[Any]], last: Sequence[Any]) -> Any:
    """Rows whose primary key sorts after ``last`` (written out: not every SQLite has row values)."""
    clauses = []
    for i, col in enumerate(key):
        equal = [key[j] == last[j] for j in range(i)]
        clauses.append(and_(*equal, col > last[i]))
    return or_(*clauses)


def _insert(engine: Engine) -> Any:
    return postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert


def _upsert(engine: Engine, table: Table) -> Any:
    stmt = _insert(engine)(table)
    key = [c.name for c in table.primary_key.columns]
    rest = {c.name: stmt.excluded[c.name] for c in table.columns if c.name not in key}
    if not rest:
        return stmt.on_conflict_do_nothing(index_elements=key)
    return stmt.on_conflict_do_update(index_elements=key, set_=rest)


def _checkpoint(conn: Connection, engine: Engine, name: str, value: str) -> None:
    stmt = _insert(engine)(checkpoints).values(name=name, value=value, updated_at=datetime.now(UTC))
    stmt = stmt.on_conflict_do_update(
        index_elements=[checkpoints.c.name],
        set_={"value": stmt.excluded.value, "updated_at": stmt.excluded.updated_at},
    )
    conn.execute(stmt)


def _encode_key(values: Sequence[Any]) -> str:
    return orjson.dumps([v.isoformat() if hasattr(v, "isoformat") else v for v in values]).decode()


def _decode_key(table: Table, raw: str) -> list[Any]:
    values = orjson.loads(raw)
    out: list[Any] = []
    for col, value in zip(table.primary_key.columns, values, strict=True):
        python_type: Any = getattr(col.type, "python_type", None)
        if isinstance(value, str) and python_type is not None and python_type is not str:
            value = python_type.fromisoformat(value) if hasattr(python_type, "fromisoformat") else value
        out.append(value)
    return out


def copy_store(
    source: Engine,
    target: Engine,
    *,
    batch_size: int = 2000,
    progress: Progress | None = None,
    restart: bool = False,
) -> CopySummary:
    """Copy every table ``source`` has into ``target`` (both already migrated to the same revision)."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    summary = CopySummary()
    have = set(inspect(source).get_table_names())
    with target.connect() as conn:
        saved = {
            str(name)[len(_PREFIX) :]: str(value)
            for name, value in conn.execute(
                select(checkpoints.c.name, checkpoints.c.value).where(checkpoints.c.name.startswith(_PREFIX))
            )
        }
    if restart:
        saved = {}
    for table in metadata.sorted_tables:
        if table.name not in have:
            summary.missing.append(table.name)
            continue
        if not table.primary_key.columns:
            raise ValueError(f"table {table.name} has no primary key: it cannot be copied resumably")
        summary.tables[table.name] = _copy_table(
            source, target, table, saved.get(table.name), batch_size, progress, summary
        )
    with target.begin() as conn:
        conn.execute(checkpoints.delete().where(checkpoints.c.name.startswith(_PREFIX)))
    if target.dialect.name == "postgresql":
        _advance_sequences(target)
    return summary


def _copy_table(
    source: Engine,
    target: Engine,
    table: Table,
    saved: str | None,
    batch_size: int,
    progress: Progress | None,
    summary: CopySummary,
) -> int:
    key = list(table.primary_key.columns)
    with source.connect() as conn:
        total = int(conn.execute(select(func.count()).select_from(table)).scalar_one())
    if saved == "done":
        summary.resumed.append(table.name)
        if progress is not None:
            progress(table.name, total, total)
        return 0
    last = None if saved is None else _decode_key(table, saved)
    if last is not None:
        summary.resumed.append(table.name)
        with source.connect() as conn:
            before = conn.execute(
                select(func.count()).select_from(table).where(~_after(key, last))
            ).scalar_one()
    else:
        before = 0
    copied = 0
    statement = _upsert(target, table)
    if progress is not None:
        progress(table.name, int(before), total)
    while True:
        query = select(table).order_by(*key).limit(batch_size)
        if last is not None:
            query = query.where(_after(key, last))
        with source.connect() as conn:
            rows = [dict(r._mapping) for r in conn.execute(query)]
        if not rows:
            break
        last = [rows[-1][c.name] for c in key]
        with target.begin() as conn:
            conn.execute(statement, rows)
            _checkpoint(conn, target, _PREFIX + table.name, _encode_key(last))
        copied += len(rows)
        if progress is not None:
            progress(table.name, int(before) + copied, total)
    with target.begin() as conn:
        _checkpoint(conn, target, _PREFIX + table.name, "done")
    return copied


def _advance_sequences(target: Engine) -> None:
    """Move each serial/identity sequence past the largest copied id (explicit ids do not advance it)."""
    with target.begin() as conn:
        for table in metadata.sorted_tables:
            if len(table.primary_key.columns) != 1:
                continue
            col = next(iter(table.primary_key.columns))
            sequence = conn.execute(select(func.pg_get_serial_sequence(table.name, col.name))).scalar()
            if sequence:
                top = conn.execute(select(func.max(col))).scalar()
                conn.execute(select(func.setval(sequence, int(top or 0) + 1, False)))
