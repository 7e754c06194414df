"""The store's error translation (adapters/store/errors.py) turns the SQL library's "unavailable" errors
into the domain's, and leaves a stop alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text

from paperfeed.adapters.store import open_store


class _Stop(BaseException):
    """An exit exception raised by a signal handler wherever the process is (as KeyboardInterrupt is)."""


def test_a_stop_raised_while_a_statement_runs_reaches_the_caller_as_itself(tmp_path: Path) -> None:
    """SQLAlchemy marks an exit exception (a BaseException, as KeyboardInterrupt or a stop signal's) as a
    disconnect; translated, it became StoreUnavailable, and `index --follow` stopped by SIGTERM during a
    lease died with a traceback instead of saying "indexer stopped"."""
    store = open_store(f"sqlite+pysqlite:///{tmp_path / 'p.db'}")
    try:

        def interrupt(*_args: Any) -> None:
            raise _Stop

        event.listen(store.engine.dialect, "do_execute", interrupt)
        try:
            with pytest.raises(_Stop), store.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        finally:
            event.remove(store.engine.dialect, "do_execute", interrupt)
        with store.engine.connect() as conn:  # and the store still works
            assert conn.execute(text("SELECT 1")).scalar() == 1
    finally:
        store.close()
