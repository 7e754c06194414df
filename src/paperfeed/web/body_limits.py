"""How much of a request body the server reads, and who may make it read one at all.

A body costs the server what it reads of it: memory for JSON and URL-encoded forms, the temporary disk
for multipart files (Starlette spools them). Route dependencies — the sign-in and CSRF checks — run only
after FastAPI has parsed ``Form``/``File`` parameters, so without a limit in front of the routes anyone
could make the server take in an arbitrarily large body. :class:`BodyLimitMiddleware` is that limit, a
pure ASGI middleware in front of every route:

1. Each request has a limit (:func:`body_limit`): ``/admin/import`` ``PAPERFEED_UPLOAD_MAX_BYTES``, the
   two library imports (``/library/import``, ``POST /api/me/library/import``)
   ``PAPERFEED_LIBRARY_IMPORT_MAX_BYTES`` (each plus 64 KiB for the multipart framing and small fields),
   every other request :data:`DEFAULT_MAX_BYTES` (1 MiB: the longest form, a private note, is 160 kB).
2. A declared ``Content-Length`` over the limit is a 413 at once; nothing is read.
3. A state-changing request the browser marks cross-site (``Sec-Fetch-Site``, a foreign ``Origin``) is
   refused (403) before its body is read, exactly as ``verify_csrf`` would after reading it — except the
   one route without a CSRF check, RFC 8058 one-click unsubscribe (:data:`CSRF_FREE_PATHS`).
4. The upload routes answer an anonymous request (the sign-in page, or 401) before reading its body.
5. Everything else is counted as the app reads it; past the limit the read fails with a 413
   (:class:`BodyTooLarge`, an ``HTTPException`` the app's error handler renders), so a chunked body is cut
   off there.
6. Any answer sent before the body was read to its end says ``Connection: close``: uvicorn then drops the
   connection instead of reading (and discarding) the rest of the body.

Form parsing itself is limited too (:mod:`paperfeed.web.forms`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from paperfeed.domain.wording import count
from paperfeed.settings_model import SettingsModel

from .errors import error_response
from .security import (
    AuthProblem,
    SignInRequired,
    auth_problem_response,
    csrf_exempt,
    current_user,
    refuse_cross_site,
)
from .uploads import too_large

__all__ = [
    "CSRF_FREE_PATHS",
    "DEFAULT_MAX_BYTES",
    "LIBRARY_IMPORT_PATHS",
    "MULTIPART_OVERHEAD",
    "UPLOAD_PATH",
    "BodyLimit",
    "BodyLimitMiddleware",
    "BodyTooLarge",
    "body_limit",
]

DEFAULT_MAX_BYTES: Final = 2**20
MULTIPART_OVERHEAD: Final = 64 * 1024  # boundaries, part headers and the small fields around the file
UPLOAD_PATH: Final = "/admin/import"
LIBRARY_IMPORT_PATHS: Final = frozenset({"/library/import", "/api/me/library/import"})
CSRF_FREE_PATHS: Final = frozenset({"/digest/unsubscribe"})  # authorised by the signed token it carries
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


@dataclass(frozen=True, slots=True)
class BodyLimit:
    """The most a request's body may hold, the setting that chose it, and whether only a signed-in user
    may send one (an upload route)."""

    max_bytes: int
    setting: str | None = None
    upload: bool = False
    message: str | None = None  # what a 413 says, when the route has its own words for it


def body_limit(path: str, settings: SettingsModel | None) -> BodyLimit:
    """The limit of a request to ``path`` (see the module doc)."""
    if settings is not None:
        if path == UPLOAD_PATH:
            size = settings.upload_max_bytes
            return BodyLimit(size + MULTIPART_OVERHEAD, "PAPERFEED_UPLOAD_MAX_BYTES", True, too_large(size))
        if path in LIBRARY_IMPORT_PATHS:
            return BodyLimit(
                settings.library_import_max_bytes + MULTIPART_OVERHEAD,
                "PAPERFEED_LIBRARY_IMPORT_MAX_BYTES",
                True,
            )
    return BodyLimit(DEFAULT_MAX_BYTES)


def _size(n: int) -> str:
    return f"{n / 2**20:,.1f} MB" if n >= 2**20 else f"{count(n, 'byte')}"


def _too_large_message(limit: BodyLimit) -> str:
    if limit.message:
        return limit.message
    where = f" (set by {limit.setting})" if limit.setting else ""
    size = _size(limit.max_bytes)
    return f"The request is larger than the {size} this address accepts{where}; nothing was done."


class BodyTooLarge(HTTPException):
    """Raised from ``receive`` once the body passes its limit; rendered as a 413 by the app's handler."""

    def __init__(self, limit: BodyLimit) -> None:
        super().__init__(413, _too_large_message(limit), headers={"Connection": "close"})


def _declared_length(headers: Headers) -> int | None:
    value = headers.get("content-length", "")
    return int(value) if value.isdigit() else None


class BodyLimitMiddleware:
    """Bounds every request body before any route reads it (see the module doc)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        declared = _declared_length(headers)
        if not declared and "transfer-encoding" not in headers:
            await self.app(scope, receive, send)  # no body to read
            return
        app = scope.get("state", {}).get("app")
        limit = body_limit(scope["path"], app.settings if app is not None else None)
        read = 0
        finished = False

        async def counted_receive() -> Message:
            nonlocal read, finished
            if read > limit.max_bytes:
                raise BodyTooLarge(limit)
            message = await receive()
            if message["type"] == "http.request":
                read += len(message.get("body", b""))
                if read > limit.max_bytes:
                    raise BodyTooLarge(limit)
                finished = not message.get("more_body", False)
            return message

        async def closing_send(message: Message) -> None:
            if message["type"] == "http.response.start" and not finished:
                MutableHeaders(scope=message)["Connection"] = "close"
            await send(message)

        early = await self._refusal(scope, limit, declared) if app is not None else None
        if early is not None:
            await early(scope, receive, closing_send)
            return
        await self.app(scope, counted_receive, closing_send)

    async def _refusal(self, scope: Scope, limit: BodyLimit, declared: int | None) -> Response | None:
        """The answer to send before reading anything, if the headers already settle it."""
        request = Request(scope)
        if declared is not None and declared > limit.max_bytes:
            return error_response(request, 413, _too_large_message(limit))
        try:
            checked = scope["method"] not in _SAFE_METHODS and scope["path"] not in CSRF_FREE_PATHS
            if checked and not csrf_exempt(request):
                refuse_cross_site(request)
            if limit.upload and current_user(request) is None:
                raise SignInRequired("Sign in to do this.", {"WWW-Authenticate": "Bearer"})
        except AuthProblem as problem:
            return await auth_problem_response(request, problem)
        return None
