"""One error shape for the whole web surface, like datasette's ``handle_exception``.

Every API, feed and Markdown error is JSON ``{"error": message, "status": code, "title": phrase}``
(validation errors add ``"errors": [{"param", "message"}]``); a browser asking for an HTML page gets the
same message as an error page in the site's layout instead (its header, search box and footer). Bad
input is a 4xx that says what was wrong and what is expected; anything unexpected is logged with its
traceback and answered with a clean 500 of the same shape (never a stack trace to the client). A
database that cannot be reached (restarting, overloaded, locked) is a 503 with ``Retry-After`` instead:
the request can be retried, and the pool reconnects by itself once the database is back.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import HTMLResponse, Response

from paperfeed.domain.errors import StoreUnavailable, StoreValueError
from paperfeed.domain.feed import InvalidCursor, InvalidPeriod
from paperfeed.domain.ids import InvalidPaperId

from .access_log import redacted_target
from .headers import baseline_headers

__all__ = ["ApiError", "JsonResponse", "error_response", "install"]

log = logging.getLogger("paperfeed.web")

_MACHINE_PREFIXES = ("/api/", "/rss/", "/atom/", "/openapi.json")


class JsonResponse(Response):
    """JSON rendered by orjson (several times faster than the stdlib for feed-sized payloads)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS)


class ApiError(Exception):
    """Raise from a handler to answer ``status`` with ``message`` (plus ``extra`` fields) in the shape."""

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.extra = extra


def error_body(status: int, message: str, **extra: Any) -> dict[str, Any]:
    try:
        title = HTTPStatus(status).phrase
    except ValueError:
        title = "Error"
    return {"error": message, "status": status, "title": title, **extra}


def _wants_html(request: Request) -> bool:
    path = request.url.path
    if path.startswith(_MACHINE_PREFIXES) or path.endswith(".md"):
        return False
    return "text/html" in request.headers.get("accept", "")


def error_response(
    request: Request, status: int, message: str, headers: Mapping[str, str] | None = None, **extra: Any
) -> Response:
    """The error answer for ``request``: JSON shape, or an error page in the site's layout for browsers.

    It carries the shared headers itself: a 500 is sent from outside the app's middlewares.
    """
    html_wanted = _wants_html(request)
    headers = {**baseline_headers(html_wanted), **(headers or {})}
    if html_wanted:
        return _error_page(request, status, message, headers)
    return JsonResponse(error_body(status, message, **extra), status_code=status, headers=headers)


# What a browser's error page says in its heading; other statuses show their HTTP phrase.
HEADINGS = {
    400: "Bad request",
    401: "Sign-in needed",
    403: "Not allowed",
    404: "Page not found",
    405: "Method not allowed",
    413: "Too large",
    429: "Too many requests",
    500: "Something went wrong",
    502: "Bad gateway",
    503: "Temporarily unavailable",
    504: "Timed out",
}


def _sentence(message: str) -> str:
    """An API message (``no such page or endpoint: /x``) as a sentence for a page: with a full stop, its
    first word kept as it is (it is often the parameter's name: ``refs_sort: …`` names what to fix)."""
    text = message.strip() or "the request failed"
    return text if text.endswith((".", "!", "?", ")")) else text + "."


def _error_page(request: Request, status: int, message: str, headers: Mapping[str, str]) -> Response:
    """The error page of :func:`~.rendering.error_page` (the site's header, search box and footer).

    A server error (5xx) is drawn for an anonymous reader: its header must not ask the store who is
    signed in, which may be what failed. Should the layout itself fail to render, a plain page that still
    carries the viewport and the site's stylesheet is sent instead (and the failure logged), never a 500
    about the 500."""
    from .rendering import error_page

    heading = HEADINGS.get(status) or error_body(status, message)["title"]
    anonymous: dict[str, Any] = {"current_user": _nobody} if status >= 500 else {}
    try:
        return error_page(request, status, heading, _sentence(message), headers=headers, **anonymous)
    except Exception:
        log.exception("the error page of %s %s did not render", request.method, request.url.path)
    return HTMLResponse(_plain_page(status, heading, _sentence(message)), status_code=status, headers=headers)


def _nobody() -> None:
    """The layout's ``current_user()`` on a server error's page: no one (the store is not asked)."""


def _plain_page(status: int, heading: str, message: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{status} {html.escape(heading)} · paperfeed</title>"
        '<link rel="stylesheet" href="/static/style.css"></head>'
        '<body><main id="main"><div class="wrap"><section class="not-found">'
        f'<p class="status-code" aria-hidden="true">{status}</p><h1>{html.escape(heading)}</h1>'
        f'<p class="lede">{html.escape(message)}</p><p><a href="/">Back to the latest papers</a></p>'
        "</section></div></main></body></html>"
    )


def _param(loc: tuple[Any, ...] | list[Any]) -> str:
    """``("query", "page")`` → ``page``; ``("body", "body")`` (a JSON field named body) → ``body``."""
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("query", "path", "body", "header", "cookie"):
        parts = parts[1:]
    return ".".join(parts) or "request"


def _shorten(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


async def _validation(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    problems = []
    for item in exc.errors():
        param = _param(item.get("loc", ()))
        message = str(item.get("msg", "invalid value"))
        if "input" in item and item["input"] is not None:
            message = f"{message} (got {_shorten(item['input'])})"
        problems.append({"param": param, "message": message})
    summary = "; ".join(f"{p['param']}: {p['message']}" for p in problems) or "invalid request"
    return error_response(request, 400, summary, errors=problems)


async def _http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    message = exc.detail if isinstance(exc.detail, str) else "request failed"
    if exc.status_code == 404 and message == "Not Found":
        message = f"no such page or endpoint: {request.url.path[:200]}"
    elif exc.status_code == 405:
        message = f"method {request.method} is not allowed here"
    return error_response(request, exc.status_code, message, headers=exc.headers)


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(request, exc.status, exc.message, **exc.extra)


async def _bad_input(request: Request, exc: Exception) -> Response:
    return error_response(request, 400, str(exc))


async def _out_of_range(request: Request, exc: Exception) -> Response:
    """A number or text the database cannot hold (an id of 2**63, an over-long value): bad input, 400."""
    log.info("value out of range on %s %s: %s", request.method, redacted_target(request), str(exc)[:200])
    return error_response(request, 400, "a value in the request is too large or out of range")


async def _database_unavailable(request: Request, exc: Exception) -> Response:
    """Connection refused/reset, a server shutting down, SQLite busy, pool exhausted: retryable, not a bug
    (the store says so with :class:`StoreUnavailable`; an integrity or programming error stays a 500)."""
    log.warning("database unavailable on %s %s: %s", request.method, redacted_target(request), str(exc)[:300])
    return error_response(
        request,
        503,
        "the database is unavailable right now; please retry in a few seconds",
        headers={"Retry-After": "5"},
    )


async def _unexpected(request: Request, exc: Exception) -> Response:
    log.error("unhandled error on %s %s", request.method, redacted_target(request), exc_info=exc)
    return error_response(request, 500, "internal error: the server could not answer this request")


def install(app: FastAPI) -> None:
    """Register the exception handlers on ``app``."""
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(StarletteHTTPException, _http)
    app.add_exception_handler(ApiError, _api_error)
    for bad_input in (InvalidPeriod, InvalidCursor, InvalidPaperId):
        app.add_exception_handler(bad_input, _bad_input)
    app.add_exception_handler(OverflowError, _out_of_range)  # sqlite3: int beyond 64 bits
    app.add_exception_handler(StoreValueError, _out_of_range)  # PostgreSQL: out of range, too long
    app.add_exception_handler(StoreUnavailable, _database_unavailable)
    app.add_exception_handler(Exception, _unexpected)
