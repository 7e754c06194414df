"""The SQL a block of code sends, as the database driver receives it: for tests that bound round trips
or inspect one statement's plan."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine


@contextmanager
def recorded_statements(engine: Engine) -> Iterator[list[tuple[str, Any]]]:
    """Every (statement, parameters) ``engine`` executes inside the ``with`` block, in order."""
    seen: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        seen.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)
