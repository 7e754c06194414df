"""Secrets out of the logs (issue #41, finding 5): the access log and the error log lines name a request's
path and query, and some of them carry the only credential a link has — a calendar feed's or an alert
feed's token in its path, an invitation's, a mailed link's token (sign-in, reset, confirmation, account
deletion) or a digest link's signed ``t`` (confirm, preferences, unsubscribe, the group digest's
unsubscribe) in its query. Whoever reads the log (an operator, a log shipper, a backup) could use them.

:class:`SecretRedactor` is made from the app's own routes when the app is made, so a new route with a
``{token}`` in its path is covered without a list to keep: a path is matched against the routes as the
router would (in order, the method counting), and the value of a path parameter named ``token`` is
replaced by ``[redacted]``, as is the value of any ``token`` or ``t`` query parameter, and a ``next``
(the page a sign-in returns to, such as an invitation's) is redacted as a target itself. uvicorn's access
logger gets a filter (:func:`install`) that rewrites each record's request target; the web's own error
lines use :func:`redacted_target`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import quote, unquote_plus

from starlette.requests import Request

__all__ = [
    "REDACTED",
    "SECRET_PATH_PARAMS",
    "SECRET_QUERY_PARAMS",
    "SecretRedactor",
    "install",
    "redacted_target",
]

REDACTED = "[redacted]"
SECRET_PATH_PARAMS = frozenset({"token"})  # /groups/calendar/{token}.ics, /rss/alerts/{token}, …
SECRET_QUERY_PARAMS = frozenset({"token", "t"})  # /reset?token=…, /digest/unsubscribe?t=…, …
RETURN_PARAMS = frozenset({"next"})  # a page to return to, itself a target with secrets perhaps
ACCESS_LOGGER = "uvicorn.access"


def _endpoints(routes: Iterable[Any]) -> Iterator[Any]:
    """The routes with an endpoint, flattened out of included routers (FastAPI keeps those lazy)."""
    for route in routes:
        if hasattr(route, "effective_candidates"):
            yield from _endpoints(list(route.effective_candidates()))
        elif hasattr(route, "path_regex"):
            yield route


class SecretRedactor:
    """Rewrites a request target (path and query) with its secrets replaced by ``[redacted]``."""

    def __init__(self, routes: Iterable[Any]) -> None:
        self._routes: list[tuple[Any, frozenset[str] | None, tuple[str, ...]]] = []
        for route in _endpoints(routes):
            methods = getattr(route, "methods", None)
            secret = tuple(n for n in getattr(route, "param_convertors", {}) if n in SECRET_PATH_PARAMS)
            self._routes.append((route.path_regex, frozenset(methods) if methods else None, secret))

    def path(self, method: str, path: str) -> str:
        for regex, methods, secret in self._routes:
            if methods is not None and method not in methods and not (method == "HEAD" and "GET" in methods):
                continue
            found = regex.match(path)
            if found is None:
                continue
            out = path
            for name in sorted(secret, key=lambda n: found.start(n), reverse=True):
                out = out[: found.start(name)] + REDACTED + out[found.end(name) :]
            return out
        return path

    def query(self, query: str) -> str:
        parts = []
        for pair in query.split("&"):
            key, eq, value = pair.partition("=")
            if eq and key in SECRET_QUERY_PARAMS:
                pair = f"{key}={REDACTED}"
            elif eq and key in RETURN_PARAMS:  # /signin?next=/groups/invitations/…: the page to go back to
                back = unquote_plus(value)
                if back.startswith("/"):
                    pair = f"{key}={quote(self.target('GET', back), safe='/')}"
            parts.append(pair)
        return "&".join(parts)

    def target(self, method: str, target: str) -> str:
        path, mark, query = target.partition("?")
        return self.path(method, path) + (mark + self.query(query) if mark else "")


class _AccessLogFilter(logging.Filter):
    """Rewrites uvicorn's access records (``'%s - "%s %s HTTP/%s" %d'``: client, method, target, …)."""

    def __init__(self, redactor: SecretRedactor) -> None:
        super().__init__("paperfeed-secrets")
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if (
            isinstance(args, tuple)
            and len(args) >= 3
            and isinstance(args[1], str)
            and isinstance(args[2], str)
        ):
            record.args = (args[0], args[1], self.redactor.target(args[1], args[2]), *args[3:])
        return True


def install(redactor: SecretRedactor) -> None:
    """Put the redactor on uvicorn's access logger, in place of one an earlier app of this process put."""
    logger = logging.getLogger(ACCESS_LOGGER)
    for old in [f for f in logger.filters if isinstance(f, _AccessLogFilter)]:
        logger.removeFilter(old)
    logger.addFilter(_AccessLogFilter(redactor))


def redacted_target(request: Request) -> str:
    """The request's path and query as a log line may show them."""
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    redactor = getattr(request.app.state, "secret_redactor", None)
    return redactor.target(request.method, target) if isinstance(redactor, SecretRedactor) else target
