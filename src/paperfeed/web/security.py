"""Who is asking, and whether a state-changing request really comes from our own pages.

Dependencies every area uses:

- :func:`current_user` — the user of the ``Authorization: Bearer`` token, else of the session cookie,
  else ``None``. A presented but invalid or revoked token is a 401 on every route, never a silent
  anonymous request: :class:`BearerTokenMiddleware` checks it before any route or cached answer.
- :func:`require_user` — pages redirect to ``/signin?next=…``; the API (and non-HTML clients) get a 401.
- :func:`require_admin` — 403 for signed-in non-admins.
- :func:`verify_csrf` — put on every POST/PUT/PATCH/DELETE route (``dependencies=[Depends(verify_csrf)]``);
  a handler that streams its own body (the papers upload) calls :func:`refuse_cross_site` before reading
  it and :func:`check_csrf_token` with the token it found.

CSRF: a signed double-submit token. Every browser gets a random ``pf_csrf`` cookie; the token in forms
(hidden field ``csrf_token``) or in the ``X-CSRF-Token`` header is an HMAC, under the instance secret,
of that cookie and of the session cookie, so it changes at sign-in and a cookie planted by a sibling
site is useless without the secret. On top, requests a browser marks cross-site (``Sec-Fetch-Site`` or
a foreign ``Origin``) are refused outright. Requests authenticated only by a Bearer token, with no
session cookie, are exempt: a browser never attaches that header to a cross-site request on its own.

Templates get ``current_user()``, ``csrf_token()`` and ``csrf_input()`` (a hidden field) as globals.
"""

from __future__ import annotations

import base64
import contextvars
import hashlib
import hmac
import secrets
from collections.abc import Mapping
from typing import Annotated, Any
from urllib.parse import quote, urlencode, urlsplit

from anyio.to_thread import run_sync
from fastapi import Depends, FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from jinja2 import pass_context
from markupsafe import Markup
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from paperfeed.bootstrap import App
from paperfeed.domain.accounts import RateLimited, User
from paperfeed.domain.wording import count

from .deps import accounts_of, app_of
from .errors import error_response
from .forms import read_form
from .rendering import Renderer, error_page

__all__ = [
    "CSRF_COOKIE",
    "CSRF_FIELD",
    "CSRF_HEADER",
    "SEARCH_PATHS",
    "SESSION_COOKIE",
    "TEMPLATE_GLOBALS",
    "Admin",
    "AuthProblem",
    "BearerTokenMiddleware",
    "CsrfRejected",
    "Forbidden",
    "SearchRateLimitMiddleware",
    "SecurityMiddleware",
    "SignInRequired",
    "asked_who",
    "auth_problem_response",
    "check_csrf_token",
    "clear_session_cookie",
    "client_address",
    "csrf_exempt",
    "csrf_token",
    "current_user",
    "install",
    "keep_personal_private",
    "link_base_url",
    "personal",
    "redirect_back",
    "refuse_cross_site",
    "require_admin",
    "require_user",
    "safe_next",
    "search_refused",
    "set_session_cookie",
    "template_request",
    "verify_csrf",
]

SESSION_COOKIE = "pf_session"
CSRF_COOKIE = "pf_csrf"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
_NEW_CSRF = "pf_new_csrf_cookie"  # request-state key: a CSRF cookie to set on the response
_USER = "pf_user"  # request-state key: the resolved user (or None), once per request
_CSRF_USED = "pf_csrf_used"  # request-state key: a CSRF token was computed (the answer is this browser's)
_TOKEN_USER = "pf_token_user"  # request-state key: the user of the Bearer token BearerTokenMiddleware checked
_CSRF_COOKIE_AGE = 365 * 24 * 3600
_MACHINE_PREFIXES = ("/api/", "/rss/", "/atom/")
_request_var: contextvars.ContextVar[Request | None] = contextvars.ContextVar("pf_request", default=None)


class AuthProblem(Exception):
    """An authentication or authorization refusal; handlers turn it into a page or JSON."""

    status = 403
    heading = "Not allowed"

    def __init__(self, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers = dict(headers or {})


class SignInRequired(AuthProblem):
    status = 401
    heading = "Sign in required"


class Forbidden(AuthProblem):
    status = 403
    heading = "Not allowed"


class CsrfRejected(AuthProblem):
    status = 403
    heading = "Request refused"


# -- who is asking --------------------------------------------------------------------------------------


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return value.strip()


def current_user(request: Request) -> User | None:
    """The signed-in user (Bearer token first, then the session cookie), resolved once per request."""
    state = request.scope.setdefault("state", {})
    if _USER in state:
        user: User | None = state[_USER]
        return user
    token = _bearer(request)
    if token is not None:
        user = state[_TOKEN_USER] if _TOKEN_USER in state else accounts_of(request).user_for_api_token(token)
        if user is None:
            raise _invalid_token()
    else:
        session = request.cookies.get(SESSION_COOKIE, "")
        user = accounts_of(request).user_for_session(session) if session else None
    state[_USER] = user
    return user


def _invalid_token() -> SignInRequired:
    return SignInRequired(
        "The API token is invalid or has been revoked.", {"WWW-Authenticate": 'Bearer error="invalid_token"'}
    )


class BearerTokenMiddleware:
    """Checks an ``Authorization: Bearer`` token before anything answers: an invalid or revoked token is a
    401 on every route — public reads, static files, ``/mcp`` and answers the page cache holds alike — so
    a client learns at once that its token no longer works instead of silently reading as anonymous.

    It sits outside :mod:`.public_cache`. The user it found is kept apart from the one a render resolves
    (:func:`current_user` reuses it without a second look-up), so an answer that never looked at who asked
    stays shareable (:func:`asked_who`)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = scope.get("state")
        if scope["type"] != "http" or not state or state.get("app") is None:
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        token = _bearer(request)
        if token is None:
            await self.app(scope, receive, send)
            return
        user = await run_sync(accounts_of(request).user_for_api_token, token)
        if user is None:
            response = await auth_problem_response(request, _invalid_token())
            await response(scope, receive, send)
            return
        state[_TOKEN_USER] = user
        await self.app(scope, receive, send)


# Anonymous GETs that run a search; the page cache answers repeats before they get here.
SEARCH_PATHS = frozenset(
    {
        "/search",
        "/search/export",
        "/api/papers/search",
        "/api/evidence",
        "/api/papers/search/export",
        "/rss/search",
        "/atom/search",
    }
)


def search_refused(request: Request, seconds: float) -> Response:
    """The 429 of a client over ``PAPERFEED_SEARCH_RATE_PER_MINUTE`` (a page for a browser, else JSON)."""
    wait = max(1, int(seconds + 0.999))
    message = (
        f"Too many searches from your address: try again in {count(wait, 'second')} (signed-in readers "
        "are not "
        "limited)."
    )
    headers = {"Retry-After": str(wait)}
    if _wants_page(request):
        return error_page(request, 429, "Too many searches", message, headers=headers)
    return error_response(request, 429, message, headers=headers, retry_after=wait)


class SearchRateLimitMiddleware:
    """Limits the searches an anonymous client address runs (:class:`~paperfeed.services.rate_limits.
    ClientRateLimiter`, ``PAPERFEED_SEARCH_RATE_PER_MINUTE``). It sits inside :mod:`.public_cache`, so a
    search the cache answers costs nothing and counts nothing; a request with a session cookie or a token
    is a reader's, not limited here."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = scope.get("state") or {}
        container: App | None = state.get("app")
        if (
            scope["type"] != "http"
            or container is None
            or scope.get("path") not in SEARCH_PATHS
            or scope.get("method") not in ("GET", "HEAD")
        ):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        if (
            not request.query_params.get("q", "").strip()
            or _bearer(request) is not None
            or request.cookies.get(SESSION_COOKIE)
        ):
            await self.app(scope, receive, send)
            return
        wait = container.search.limiter.wait(client_address(request))
        if wait > 0:
            await search_refused(request, wait)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _wants_page(request: Request) -> bool:
    if request.url.path.startswith(_MACHINE_PREFIXES) or _bearer(request) is not None:
        return False
    return "text/html" in request.headers.get("accept", "")


def require_user(request: Request) -> User:
    """The signed-in user, or a redirect to the sign-in page (browsers) / a 401 (API clients)."""
    user = current_user(request)
    if user is None:
        raise SignInRequired("Sign in to do this.", {"WWW-Authenticate": "Bearer"})
    return user


def require_admin(user: Annotated[User, Depends(require_user)]) -> User:
    if not user.is_admin:
        raise Forbidden("Only administrators can do this.")
    return user


Admin = Annotated[User, Depends(require_admin)]  # a handler parameter: the signed-in administrator


def client_address(request: Request) -> str:
    """The client's IP (uvicorn's proxy_headers turns a trusted proxy's X-Forwarded-For into it)."""
    return request.client.host if request.client else "unknown"


def link_base_url(request: Request) -> str:
    """Where mailed links point: the configured public URL, never the URL this request came to (a
    forged Host header must not steer password-reset links elsewhere; see :mod:`paperfeed.public_url`)."""
    return app_of(request).core.public_url


def safe_next(value: str | None, default: str = "/") -> str:
    """A local path to return to after signing in; anything else (other sites, ``//host``) is ignored."""
    if not value or not value.startswith("/") or value.startswith(("//", "/\\")) or len(value) > 2000:
        return default
    if any(c in value for c in "\r\n\t\\") or urlsplit(value).netloc:
        return default
    return value


ONE_TIME_KEYS = frozenset({"done", "queued"})  # what a redirect adds for the next page to show once


def _without_one_time(query: str) -> list[str]:
    """The ``key=value`` parts of a raw query string but the one-time keys, each as it was written."""
    return [part for part in query.split("&") if part and part.partition("=")[0] not in ONE_TIME_KEYS]


def here(request: Request) -> str:
    """The current page as a form's ``next``: its path and query without the keys a redirect added for
    one showing (``done``, ``queued``), so a later form does not carry an old message on (issue #40)."""
    kept = _without_one_time(request.url.query)
    return request.url.path + (f"?{'&'.join(kept)}" if kept else "")


def redirect_back(
    next_url: str | None, default: str, done: str | None = None, shown: Mapping[str, str] | None = None
) -> RedirectResponse:
    """303 to the form's ``next`` page if it is a local path (see :func:`safe_next`), else to ``default``;
    ``done`` names the message the page shows (chosen by key, so no text from the URL is ever shown) and
    ``shown`` adds what it is about (``queued``: the paper just queued); a ``done`` already in ``next``
    is replaced, never repeated."""
    target = urlsplit(safe_next(next_url, default))
    query = _without_one_time(target.query)
    if done:
        query.append(urlencode({"done": done, **(shown or {})}))
    location = target.path + (f"?{'&'.join(query)}" if query else "")
    return RedirectResponse(location + (f"#{target.fragment}" if target.fragment else ""), status_code=303)


# -- cookies --------------------------------------------------------------------------------------------


def _secure(request: Request) -> bool:
    base = app_of(request).settings.base_url or ""
    return base.startswith("https://") or request.url.scheme == "https"


def set_session_cookie(response: Response, request: Request, session: str) -> None:
    seconds = int(accounts_of(request).session_lifetime.total_seconds())
    response.set_cookie(
        SESSION_COOKIE,
        session,
        max_age=seconds,
        path="/",
        secure=_secure(request),
        httponly=True,
        samesite="lax",
    )


def clear_session_cookie(response: Response, request: Request) -> None:
    response.delete_cookie(SESSION_COOKIE, path="/", secure=_secure(request), httponly=True, samesite="lax")


# -- CSRF -----------------------------------------------------------------------------------------------


def _csrf_for(secret: bytes, browser: str, session: str) -> str:
    session_digest = hashlib.sha256(session.encode()).hexdigest() if session else "-"
    mac = hmac.new(secret, f"csrf|{browser}|{session_digest}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def csrf_token(request: Request) -> str:
    """The token this request's pages must send back (as ``csrf_token`` or ``X-CSRF-Token``)."""
    state = request.scope.setdefault("state", {})
    state[_CSRF_USED] = True
    browser = request.cookies.get(CSRF_COOKIE, "") or state.get(_NEW_CSRF, "")
    if not browser:
        browser = secrets.token_urlsafe(24)
        state[_NEW_CSRF] = browser  # SecurityMiddleware sets the cookie on the response
    return _csrf_for(app_of(request).core.secret_key, browser, request.cookies.get(SESSION_COOKIE, ""))


def personal(state: Mapping[str, Any]) -> bool:
    """Whether the answer to the request with this ``scope["state"]`` is one browser's or reader's own:
    a signed-in user was resolved, or a CSRF token (tied to the browser's cookie) was computed. Such an
    answer must never be kept by a shared cache (:mod:`.public_cache` checks this after rendering)."""
    return state.get(_USER) is not None or bool(state.get(_CSRF_USED)) or bool(state.get(_NEW_CSRF))


def asked_who(state: Mapping[str, Any]) -> bool:
    """Whether rendering the answer with this ``scope["state"]`` looked at who is asking: it resolved the
    reader (even to nobody) or computed a CSRF token. An answer that did neither is the same for every
    reader, so :mod:`.public_cache` may give its anonymous copy to a signed-in one (a Bearer script)."""
    return _USER in state or bool(state.get(_CSRF_USED)) or bool(state.get(_NEW_CSRF))


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _cross_site(request: Request) -> str | None:
    """Why the browser says this request came from another site, if it does."""
    if request.headers.get("sec-fetch-site", "").lower() == "cross-site":
        return "the browser marked it as coming from another site"
    origin = request.headers.get("origin")
    if origin is None:
        return None
    if origin == "null":
        return "it came from a page without an origin"
    allowed = {_origin_of(str(request.base_url))}
    configured = app_of(request).settings.base_url
    if configured:
        allowed.add(_origin_of(configured))
    host = request.headers.get("host", "").lower()
    if origin.lower() in allowed or (host and urlsplit(origin).netloc.lower() == host):
        return None
    return f"it came from {origin[:100]}"


async def verify_csrf(request: Request) -> None:
    """Refuse a state-changing request that did not come from one of our pages (see the module doc)."""
    if csrf_exempt(request):
        return
    refuse_cross_site(request)
    sent = request.headers.get(CSRF_HEADER, "")
    if not sent:
        content_type = request.headers.get("content-type", "")
        if content_type.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
            form = await read_form(request)
            value = form.get(CSRF_FIELD)
            sent = value if isinstance(value, str) else ""
    check_csrf_token(request, sent)


def csrf_exempt(request: Request) -> bool:
    """A safe method, or a client authenticated only by a Bearer token (no ambient credential to ride on)."""
    if request.method in _SAFE_METHODS:
        return True
    return _bearer(request) is not None and SESSION_COOKIE not in request.cookies


def refuse_cross_site(request: Request) -> None:
    """:class:`CsrfRejected` when the browser says the request came from another site (checked before a
    body is read)."""
    reason = _cross_site(request)
    if reason is not None:
        raise CsrfRejected(f"Cross-site request refused: {reason}.")


def check_csrf_token(request: Request, sent: str) -> None:
    """:class:`CsrfRejected` unless ``sent`` is this browser's token. For handlers that read their body
    themselves (a streamed upload) and find the token in it; others use :func:`verify_csrf`."""
    if not sent:
        raise CsrfRejected(
            "The security token of this form is missing. Reload the page and try again "
            f"(API clients: send the {CSRF_HEADER} header or use a Bearer token)."
        )
    if CSRF_COOKIE not in request.cookies:
        csrf_token(request)  # so the error reply sets the cookie and a reload works
        raise CsrfRejected(
            "Your browser did not send this site's security cookie. Reload the page and try again."
        )
    if not hmac.compare_digest(sent.encode(), csrf_token(request).encode()):
        raise CsrfRejected(
            "The security token of this form is out of date (did you sign in or out in another tab?). "
            "Reload the page and try again."
        )


def keep_personal_private(headers: MutableHeaders, state: Mapping[str, Any]) -> None:
    """The one rule for every route: an answer whose rendering resolved a signed-in reader or computed a
    CSRF token (:func:`personal`) is that reader's, so a ``public`` its handler chose becomes ``private,
    no-store`` (a shared cache in front must never hand it to the next visitor); a public answer whose
    rendering looked at who asks (:func:`asked_who`, e.g. an anonymous view of a page a reader sees
    otherwise) varies on ``Cookie`` and ``Authorization`` so a shared cache keeps the two apart."""
    cache = headers.get("cache-control", "").lower()
    if "public" not in cache:
        return
    if personal(state):
        headers["Cache-Control"] = "private, no-store"
    elif asked_who(state):
        varies = {v.strip().lower() for v in headers.get("vary", "").split(",") if v.strip()}
        for name in ("Cookie", "Authorization"):
            if name.lower() not in varies and "*" not in varies:
                headers.add_vary_header(name)


class SecurityMiddleware:
    """Sets a new browser's CSRF cookie on the response, keeps a reader's answer private
    (:func:`keep_personal_private`) and makes the request visible to templates."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state: dict[str, Any] = scope.setdefault("state", {})
        reset = _request_var.set(Request(scope))

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                keep_personal_private(MutableHeaders(scope=message), state)
            if message["type"] == "http.response.start" and state.get(_NEW_CSRF):
                headers = MutableHeaders(scope=message)
                app: App | None = state.get("app")
                base = (app.settings.base_url or "") if app is not None else ""
                secure = "; Secure" if base.startswith("https://") or scope.get("scheme") == "https" else ""
                headers.append(
                    "set-cookie",
                    f"{CSRF_COOKIE}={state[_NEW_CSRF]}; Max-Age={_CSRF_COOKIE_AGE}; Path=/; HttpOnly; "
                    f"SameSite=Lax{secure}",
                )
            await send(message)

        try:
            await self.app(scope, receive, send_with_cookie)
        finally:
            _request_var.reset(reset)


# -- templates ------------------------------------------------------------------------------------------


def template_request(ctx: Any) -> Request:
    """The request a template is rendered for (template globals of every area need it)."""
    request = ctx.get("request") if hasattr(ctx, "get") else None
    if request is None:
        request = _request_var.get()
    if request is None:
        raise RuntimeError("csrf_token()/current_user() need the request: render with TemplateResponse")
    assert isinstance(request, Request)
    return request


@pass_context
def _template_csrf_token(ctx: Any) -> str:
    return csrf_token(template_request(ctx))


@pass_context
def _template_csrf_input(ctx: Any) -> Markup:
    token = csrf_token(template_request(ctx))
    return Markup('<input type="hidden" name="{}" value="{}">').format(CSRF_FIELD, token)


@pass_context
def _template_user(ctx: Any) -> User | None:
    try:
        return current_user(template_request(ctx))
    except AuthProblem:
        return None  # a bad Bearer token on a page: the error reply itself must still render


TEMPLATE_GLOBALS: Mapping[str, Any] = {
    "csrf_token": _template_csrf_token,
    "csrf_input": _template_csrf_input,
    "current_user": _template_user,
    "csrf_field_name": CSRF_FIELD,
}


# -- error replies --------------------------------------------------------------------------------------


async def auth_problem_response(request: Request, exc: Exception) -> Response:
    """The answer to an :class:`AuthProblem`: the sign-in page for a browser, else the error page or JSON
    (also sent by :class:`~paperfeed.web.body_limits.BodyLimitMiddleware`, before any route runs)."""
    assert isinstance(exc, AuthProblem)
    if isinstance(exc, SignInRequired) and _wants_page(request):
        back = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        if request.method not in _SAFE_METHODS:  # return to the page the form was on
            referer = request.headers.get("referer", "")
            parts = urlsplit(referer)
            same = parts.netloc == request.headers.get("host", "")
            back = (parts.path + (f"?{parts.query}" if parts.query else "")) if same else "/"
        return RedirectResponse(f"/signin?next={quote(safe_next(back), safe='/')}", status_code=303)
    if _wants_page(request):
        return error_page(request, exc.status, exc.heading, exc.message, headers=exc.headers)
    return error_response(request, exc.status, exc.message, headers=exc.headers)


async def _rate_limited(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RateLimited)
    headers = {"Retry-After": str(exc.retry_after)}
    if _wants_page(request):
        return error_page(request, 429, "Too many attempts", str(exc), headers=headers)
    return error_response(request, 429, str(exc), headers=headers, retry_after=exc.retry_after)


def install(app: FastAPI, renderer: Renderer) -> None:
    """Register the middleware, the error replies and the template globals."""
    app.add_middleware(SecurityMiddleware)
    app.add_exception_handler(AuthProblem, auth_problem_response)
    app.add_exception_handler(RateLimited, _rate_limited)
    renderer.add_globals(TEMPLATE_GLOBALS)
