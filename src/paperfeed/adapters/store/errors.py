"""The SQL library's errors, translated into the domain's at the store's boundary.

A surface must tell "the database is unavailable, retry" (the web's 503) and "a value out of the
database's range" (400) from a bug, without knowing which library is behind the store: every engine the
store makes carries a ``handle_error`` hook that raises :class:`~paperfeed.domain.errors.StoreUnavailable`
or :class:`~paperfeed.domain.errors.StoreValueError` instead (the library's own error as its cause, so
logs keep the detail), and the pool raises ``StoreUnavailable`` when no connection frees up in time.
Everything else -- an integrity error a write expects, a programming error -- stays the library's: the
adapters catch what they expect, and anything else is a bug (500).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine, ExceptionContext
from sqlalchemy.pool import QueuePool

from paperfeed.domain.errors import InvalidDatabaseUrl, StoreUnavailable, StoreValueError

__all__ = ["TranslatingQueuePool", "invalid_url", "translate_errors"]

_UNAVAILABLE = (sa_exc.OperationalError, sa_exc.InterfaceError)  # refused, reset, shutting down, busy


def _message(error: BaseException) -> str:
    return str(getattr(error, "orig", None) or error)[:500]


def _translate(context: ExceptionContext) -> BaseException | None:
    if context.is_pre_ping:  # the pool reconnects on its own after a failed ping
        return None
    if not isinstance(context.original_exception, Exception):
        # an exit exception (Ctrl+C, a stop signal's, SystemExit) raised while a statement ran: the
        # library calls it a disconnect, but it is no database error and must reach its handler as itself
        return None
    error = context.sqlalchemy_exception
    if isinstance(error, sa_exc.DataError):
        return StoreValueError(_message(error))
    invalidated = getattr(error, "connection_invalidated", False)
    if context.is_disconnect or invalidated or isinstance(error, _UNAVAILABLE):
        return StoreUnavailable(_message(error if error is not None else context.original_exception))
    return None


def translate_errors(engine: Engine) -> Engine:
    """``engine`` raising the domain's store errors (see the module doc)."""
    event.listen(engine, "handle_error", _translate, retval=True)
    return engine


class TranslatingQueuePool(QueuePool):
    """The default pool, raising :class:`StoreUnavailable` when every connection stays busy past the
    pool's timeout (the library's ``TimeoutError``, which is no database error and never reaches
    ``handle_error``)."""

    def _do_get(self) -> Any:
        try:
            return super()._do_get()
        except sa_exc.TimeoutError as exc:
            raise StoreUnavailable(f"no database connection free in time: {exc}") from exc


def invalid_url(error: sa_exc.ArgumentError) -> InvalidDatabaseUrl:
    """The domain's error for a database URL the library cannot use (unknown driver, bad syntax)."""
    return InvalidDatabaseUrl(str(error))
