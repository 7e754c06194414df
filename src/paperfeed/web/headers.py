"""Response headers and HTTP semantics the whole app shares, as two pure ASGI middlewares.

:class:`HeadMiddleware` answers ``HEAD`` wherever ``GET`` is answered: the request runs as a GET and the
body is dropped, so the status and headers (``Content-Length`` included) are the GET's.

:class:`ResponseHeadersMiddleware` puts on every response, unless the handler chose otherwise:

- ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: same-origin`` (JSON, feeds, Markdown,
  static files, 404s and 405s alike);
- on HTML, the site's :data:`CSP` (error pages included);
- ``Strict-Transport-Security`` when the request came over https: the scheme uvicorn reports (with
  ``--proxy-headers`` it takes a trusted proxy's ``X-Forwarded-Proto``) or an https
  ``PAPERFEED_BASE_URL``, the same rule that makes cookies ``Secure``;
- for a request carrying a session cookie or an ``Authorization`` header, ``Cache-Control: private,
  no-store`` when the handler set no ``Cache-Control``: whatever a signed-in reader sees may be theirs
  alone, and neither a shared cache nor the browser's disk should keep it;
- ``Vary: Cookie, Authorization`` on every answer not marked ``public`` by its handler (feeds and static
  files are) or by :mod:`.public_cache` (anonymous reads, which set their own ``Vary``), so a cache never
  hands one reader's page to another.

500 answers are made outside these middlewares (Starlette's outermost error layer), so
:func:`~paperfeed.web.errors.error_response` sets the same defaults itself.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "CSP",
    "HSTS",
    "SESSION_COOKIE_PREFIX",
    "HeadMiddleware",
    "ResponseHeadersMiddleware",
    "baseline_headers",
]

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HSTS = "max-age=31536000"  # a year; no includeSubDomains: other hosts of the owner's domain are not ours
# security.SESSION_COOKIE (not imported: security imports this module through errors; a test ties them).
SESSION_COOKIE_PREFIX = b"pf_session="
# Internal: how long an anonymous copy of an otherwise private answer may be shared (.public_cache reads
# it); never sent to a client.
PUBLIC_SECONDS_HEADER = "x-paperfeed-public-seconds"
# Internal: the most seconds the page cache may keep this (otherwise public) answer; never sent either.
KEEP_SECONDS_HEADER = "x-paperfeed-keep-seconds"


def baseline_headers(html: bool) -> dict[str, str]:
    """The headers every answer carries (``html``: with the CSP)."""
    headers = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin"}
    if html:
        headers["Content-Security-Policy"] = CSP
    return headers


class HeadMiddleware:
    """``HEAD`` is ``GET`` without the body (RFC 9110 §9.3.2), for every route, mount and error."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def without_body(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, without_body)


def _https(scope: Scope) -> bool:
    if scope.get("scheme") == "https":
        return True
    app = scope.get("state", {}).get("app")
    base = (app.settings.base_url or "") if app is not None else ""
    return base.startswith("https://")


def _credentialed(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"authorization" and value.strip():
            return True
        if name == b"cookie" and SESSION_COOKIE_PREFIX in value:
            return True
    return False


class ResponseHeadersMiddleware:
    """Adds the shared headers to each response's start (see the module doc); a handler's own win."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        https = _https(scope)
        credentialed = _credentialed(scope)

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for internal in (PUBLIC_SECONDS_HEADER, KEEP_SECONDS_HEADER):
                    if internal in headers:
                        del headers[internal]
                html = headers.get("content-type", "").startswith("text/html")
                for name, value in baseline_headers(html).items():
                    if name not in headers:
                        headers[name] = value
                if https:
                    headers["Strict-Transport-Security"] = HSTS
                cache = headers.get("cache-control", "")
                if credentialed and not cache:
                    headers["Cache-Control"] = "private, no-store"
                if "public" not in cache:
                    varies = {v.strip().lower() for v in headers.get("vary", "").split(",") if v.strip()}
                    for name in ("Cookie", "Authorization"):
                        if name.lower() not in varies and "*" not in varies:
                            headers.add_vary_header(name)
            await send(message)

        await self.app(scope, receive, with_headers)
