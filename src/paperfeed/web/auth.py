"""Account pages and endpoints: sign up, sign in (password or mailed link), verify, reset, settings, admin.

Every state change is a POST checked by :func:`~.security.verify_csrf`; a link opened from a mail only
shows a page whose button does the change (mail scanners that fetch links use nothing up). Replies to
sign-in, link and reset requests never say whether an address has an account.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel, Field

from paperfeed.domain.accounts import (
    AccountError,
    ApiToken,
    EmailNotVerified,
    InvalidLink,
    NotFound,
    RateLimited,
    User,
)

from .deps import accounts_of, app_of
from .errors import ApiError, JsonResponse
from .rendering import NO_STORE, page
from .security import (
    SESSION_COOKIE,
    Admin,
    Forbidden,
    clear_session_cookie,
    client_address,
    current_user,
    link_base_url,
    require_user,
    safe_next,
    set_session_cookie,
    verify_csrf,
)

__all__ = ["account_page", "api_router", "paper_id_of", "router"]

router = APIRouter(include_in_schema=False)
api_router = APIRouter(prefix="/api", tags=["accounts"])

CsrfChecked = Depends(verify_csrf)
# Messages after a redirect are chosen by key, so no text from the URL is ever shown.
_DONE = {
    "signed-in": "You are signed in.",
    "signed-out": "You are signed out.",
    "password": "Your password is changed; other sessions were signed out and your API tokens were revoked.",
    "reset": (
        "Your password is set and you are signed in. Every other session was signed out and every API "
        "token revoked."
    ),
    "profile": "Your display name is saved.",
    "revoked": "The token is revoked: it stops working at once.",
    "everywhere": "Every session was signed out.",
    "verified": "Your email address is confirmed. Sign in to continue.",
    "verified-in": (
        "Your email address is confirmed and you are signed in. Set a password below if you want one, "
        "or keep signing in with emailed links."
    ),
    "verified-dropped": (
        "Your email address is confirmed and you are signed in. The password given at sign-up was not kept, "
        "because it was not set in this browser: choose a password below. (If you did not sign up "
        "yourself, someone else tried to with your address; nothing they chose was kept.)"
    ),
    "hidden": "Done.",
}


def account_page(
    request: Request,
    name: str,
    title: str,
    *,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
    **context: Any,
) -> HTMLResponse:
    """An ``auth/`` page through :func:`~.rendering.page`: never cached (forms carry CSRF tokens, some pages
    a one-time token), with the message a redirect's ``?done=`` key chose."""
    context = {
        "done": _DONE.get(request.query_params.get("done", "")),
        "error": None,
        "mail_kept": app_of(request).mail.kept,  # no mail server: the pages say where mail goes
        **context,
    }
    return page(
        request,
        f"auth/{name}.html",
        title,
        nav="account",
        status=status,
        cache=NO_STORE,
        headers=headers,
        **context,
    )


def _signed_in_redirect(request: Request, session: str, to: str) -> RedirectResponse:
    # A fresh random session id at every sign-in: a session id planted before cannot be ridden.
    old = request.cookies.get(SESSION_COOKIE)
    if old:
        accounts_of(request).sign_out(old)
    response = RedirectResponse(to, status_code=303)
    set_session_cookie(response, request, session)
    return response


# -- the sign-up proof (issue #12) -------------------------------------------------------------------------
# The browser that set a password at sign-up (or signed in with it while unconfirmed) keeps a proof
# (services/accounts.py: a keyed digest of the account and its password hash); confirming the address from
# that browser keeps the password, from any other drops it. On https the cookie is ``__Host-`` prefixed
# (host-only, Secure, Path=/), so a sibling subdomain cannot plant one; on plain http it is sent to /verify
# only. HttpOnly, SameSite=Lax (the confirmation is a same-site form post), gone after 48 hours.

_PROOF_COOKIE = "pf_signup"
_PROOF_AGE = 48 * 3600  # as long as a confirmation link lives


def _proof_cookie(request: Request) -> tuple[str, str, bool]:
    """The proof cookie's name, path and Secure flag for this site."""
    secure = (link_base_url(request).startswith("https://")) or request.url.scheme == "https"
    return (f"__Host-{_PROOF_COOKIE}", "/", True) if secure else (_PROOF_COOKIE, "/verify", False)


def _keep_proof(response: Response, request: Request, proof: str) -> None:
    name, path, secure = _proof_cookie(request)
    response.set_cookie(
        name, proof, max_age=_PROOF_AGE, path=path, secure=secure, httponly=True, samesite="lax"
    )


def _drop_proof(request: Request, response: Response) -> None:
    """A proof is good for one confirmation: the reply to it deletes the cookie."""
    name, path, secure = _proof_cookie(request)
    response.delete_cookie(name, path=path, secure=secure, httponly=True, samesite="lax")


def _rate_limited(request: Request, name: str, title: str, exc: RateLimited, **context: Any) -> HTMLResponse:
    headers = {"Retry-After": str(exc.retry_after)}
    return account_page(request, name, title, status=429, headers=headers, error=str(exc), **context)


def _mail_link(
    request: Request, send: Callable[[], object], purpose: str, form: tuple[str, str], **fields: Any
) -> HTMLResponse:
    """The forms that mail a link (sign up, resend, sign-in link, reset): on success the "check your inbox"
    page; a refusal shows the form (``form`` = template, title) again with ``fields`` and the reason."""
    name, title = form
    try:
        send()
    except RateLimited as exc:
        return _rate_limited(request, name, title, exc, **fields)
    except AccountError as exc:
        return account_page(request, name, title, status=400, error=str(exc), **fields)
    # Without a mail server the message is kept for the administrator (paperfeed mail outbox): the page
    # says so, and never shows the link, which only the address's owner may get.
    title = "Message kept for the administrator" if app_of(request).mail.kept else "Check your inbox"
    return account_page(request, "check_email", title, email=fields["email"].strip(), purpose=purpose)


# What a mailed link's confirmation page says and where its one button posts to.
_CONFIRM = {
    "verify": ("Confirm your email", "/verify", "Confirm my email address"),
    "signin": ("Sign in", "/signin/link", "Sign in"),
}


def _confirm_page(
    request: Request, purpose: str, token: str, usable: bool, error: str | None = None
) -> HTMLResponse:
    """The page a mailed link opens: a button does the change (mail scanners that fetch links change
    nothing). An unusable link, or one the POST refused (``error``), is a 400 without the button."""
    title, action, button = _CONFIRM[purpose]
    return account_page(
        request,
        "confirm",
        title,
        status=200 if usable else 400,
        token=token,
        usable=usable,
        error=error,
        action=action,
        button=button if error is None else "",
        purpose=purpose,
    )


# -- sign up and verification ---------------------------------------------------------------------------


@router.get("/signup", response_class=HTMLResponse)
def signup_form(request: Request) -> HTMLResponse:
    return account_page(request, "signup", "Sign up", email="", display_name="")


@router.post("/signup", response_class=HTMLResponse, dependencies=[CsrfChecked])
def signup(
    request: Request,
    email: Annotated[str, Form(max_length=400)] = "",
    password: Annotated[str, Form(max_length=2000)] = "",
    display_name: Annotated[str, Form(max_length=400)] = "",
) -> HTMLResponse:
    proofs: list[str] = []
    page = _mail_link(
        request,
        lambda: proofs.append(
            accounts_of(request).sign_up(
                email,
                password or None,
                display_name or None,
                client=client_address(request),
                base_url=link_base_url(request),
            )
        ),
        "verify",
        ("signup", "Sign up"),
        email=email,
        display_name=display_name,
    )
    if proofs:  # every accepted sign-up sets one (a decoy when the address is taken: no enumeration)
        _keep_proof(page, request, proofs[0])
    return page


@router.get("/verify", response_class=HTMLResponse)
def verify_page(request: Request, token: str = "") -> HTMLResponse:
    return _confirm_page(request, "verify", token, accounts_of(request).link_is_usable(token, "verify"))


@router.post("/verify", response_model=None, dependencies=[CsrfChecked])
def verify(request: Request, token: Annotated[str, Form(max_length=200)] = "") -> Response:
    """Confirm an address. The sign-up's password survives only if this browser set or proved it (see
    ``AccountService.verify_email``); otherwise the link, which proves the address, signs the person in
    to choose their own."""
    proof = request.cookies.get(_proof_cookie(request)[0], "")
    try:
        confirmed = accounts_of(request).verify_email(token, proof=proof)
    except InvalidLink as exc:
        return _confirm_page(request, "verify", "", False, str(exc))
    response: Response
    if confirmed.signed_in is not None:
        done = "verified-dropped" if confirmed.dropped else "verified-in"
        response = _signed_in_redirect(request, confirmed.signed_in.session, f"/account?done={done}")
    else:
        signed_in = current_user(request)
        mine = signed_in is not None and signed_in.id == confirmed.user.id
        to = "/account?done=verified" if mine else "/signin?done=verified"
        response = RedirectResponse(to, status_code=303)
    _drop_proof(request, response)
    return response


@router.post("/verify/resend", response_class=HTMLResponse, dependencies=[CsrfChecked])
def resend_verification(request: Request, email: Annotated[str, Form(max_length=400)] = "") -> HTMLResponse:
    return _mail_link(
        request,
        lambda: accounts_of(request).resend_verification(
            email, client=client_address(request), base_url=link_base_url(request)
        ),
        "verify",
        ("signin", "Sign in"),
        email=email,
        next="/",
    )


# -- sign in and out ------------------------------------------------------------------------------------


@router.get("/signin", response_class=HTMLResponse)
def signin_form(request: Request, next: str = "/") -> HTMLResponse:
    return account_page(request, "signin", "Sign in", email="", next=safe_next(next))


@router.post("/signin", response_model=None, dependencies=[CsrfChecked])
def signin(
    request: Request,
    email: Annotated[str, Form(max_length=400)] = "",
    password: Annotated[str, Form(max_length=2000)] = "",
    next: Annotated[str, Form(max_length=2000)] = "/",
) -> Response:
    back = safe_next(next)
    form: dict[str, Any] = {"email": email, "next": back}
    try:
        signed = accounts_of(request).sign_in(
            email, password, client=client_address(request), base_url=link_base_url(request)
        )
    except RateLimited as exc:
        return _rate_limited(request, "signin", "Sign in", exc, **form)
    except EmailNotVerified as exc:
        refused = account_page(
            request, "signin", "Sign in", status=403, error=str(exc), unverified=True, **form
        )
        if exc.proof:  # this browser knows the password: confirming here keeps it
            _keep_proof(refused, request, exc.proof)
        return refused
    except AccountError as exc:
        return account_page(request, "signin", "Sign in", status=400, error=str(exc), **form)
    return _signed_in_redirect(request, signed.session, back)


@router.post("/signin/email", response_class=HTMLResponse, dependencies=[CsrfChecked])
def request_signin_link(
    request: Request,
    email: Annotated[str, Form(max_length=400)] = "",
    next: Annotated[str, Form(max_length=2000)] = "/",
) -> HTMLResponse:
    return _mail_link(
        request,
        lambda: accounts_of(request).request_sign_in_link(
            email, client=client_address(request), base_url=link_base_url(request)
        ),
        "signin",
        ("signin", "Sign in"),
        email=email,
        next=safe_next(next),
    )


@router.get("/signin/link", response_class=HTMLResponse)
def signin_link_page(request: Request, token: str = "") -> HTMLResponse:
    return _confirm_page(request, "signin", token, accounts_of(request).link_is_usable(token, "signin"))


@router.post("/signin/link", response_model=None, dependencies=[CsrfChecked])
def signin_with_link(request: Request, token: Annotated[str, Form(max_length=200)] = "") -> Response:
    try:
        signed = accounts_of(request).sign_in_with_link(token)
    except InvalidLink as exc:
        return _confirm_page(request, "signin", "", False, str(exc))
    return _signed_in_redirect(request, signed.session, "/?done=signed-in")


@router.post("/signout", dependencies=[CsrfChecked])
def signout(request: Request) -> RedirectResponse:
    accounts_of(request).sign_out(request.cookies.get(SESSION_COOKIE, ""))
    response = RedirectResponse("/?done=signed-out", status_code=303)
    clear_session_cookie(response, request)
    return response


# -- passwords ------------------------------------------------------------------------------------------


@router.get("/forgot", response_class=HTMLResponse)
def forgot_form(request: Request) -> HTMLResponse:
    return account_page(request, "forgot", "Forgot your password?", email="")


@router.post("/forgot", response_class=HTMLResponse, dependencies=[CsrfChecked])
def forgot(request: Request, email: Annotated[str, Form(max_length=400)] = "") -> HTMLResponse:
    return _mail_link(
        request,
        lambda: accounts_of(request).request_password_reset(
            email, client=client_address(request), base_url=link_base_url(request)
        ),
        "reset",
        ("forgot", "Forgot your password?"),
        email=email,
    )


@router.get("/reset", response_class=HTMLResponse)
def reset_form(request: Request, token: str = "") -> HTMLResponse:
    usable = accounts_of(request).link_is_usable(token, "reset")
    return account_page(
        request, "reset", "Choose a new password", status=200 if usable else 400, token=token, usable=usable
    )


@router.post("/reset", response_model=None, dependencies=[CsrfChecked])
def reset(
    request: Request,
    token: Annotated[str, Form(max_length=200)] = "",
    password: Annotated[str, Form(max_length=2000)] = "",
) -> Response:
    try:
        signed = accounts_of(request).reset_password(token, password)
    except InvalidLink as exc:
        return account_page(
            request, "reset", "Choose a new password", status=400, token="", usable=False, error=str(exc)
        )
    except AccountError as exc:
        return account_page(
            request, "reset", "Choose a new password", status=400, token=token, usable=True, error=str(exc)
        )
    return _signed_in_redirect(request, signed.session, "/account?done=reset")


# -- account settings -----------------------------------------------------------------------------------


def _account_page(
    request: Request, user: User, *, status: int = 200, error: str | None = None, new_token: str | None = None
) -> HTMLResponse:
    accounts = accounts_of(request)
    return account_page(
        request,
        "account",
        "Your account",
        status=status,
        user=user,
        tokens=accounts.list_api_tokens(user),
        has_password=accounts.has_password(user),
        error=error,
        new_token=new_token,
    )


Signed = Annotated[User, Depends(require_user)]


def require_session_user(request: Request, user: Signed) -> User:
    """The signed-in user, when signed in with a session rather than an API token.

    Minting tokens and setting a password need a browser session: a token that could create tokens would
    leave copies that outlive its own revocation, and one that could set a password would turn into a
    full sign-in."""
    scheme = request.headers.get("authorization", "").partition(" ")[0]
    if scheme.lower() == "bearer":
        raise Forbidden(
            "An API token cannot create API tokens or change the password: "
            "do that on your account page, signed in with a browser."
        )
    return user


SessionSigned = Annotated[User, Depends(require_session_user)]


@router.get("/account", response_class=HTMLResponse)
def account(request: Request, user: Signed) -> HTMLResponse:
    return _account_page(request, user)


@router.post("/account/profile", response_model=None, dependencies=[CsrfChecked])
def account_profile(
    request: Request, user: Signed, display_name: Annotated[str, Form(max_length=400)] = ""
) -> Response:
    accounts_of(request).set_display_name(user, display_name or None)
    return RedirectResponse("/account?done=profile", status_code=303)


@router.post("/account/password", response_model=None, dependencies=[CsrfChecked])
def account_password(
    request: Request,
    user: SessionSigned,
    current: Annotated[str, Form(max_length=2000)] = "",
    password: Annotated[str, Form(max_length=2000)] = "",
) -> Response:
    try:
        accounts_of(request).change_password(
            user, current, password, keep_session=request.cookies.get(SESSION_COOKIE, "")
        )
    except AccountError as exc:
        return _account_page(request, user, status=400, error=str(exc))
    return RedirectResponse("/account?done=password", status_code=303)


@router.post("/account/tokens", response_class=HTMLResponse, dependencies=[CsrfChecked])
def account_new_token(
    request: Request, user: SessionSigned, name: Annotated[str, Form(max_length=400)] = ""
) -> HTMLResponse:
    try:
        _, secret = accounts_of(request).create_api_token(user, name)
    except AccountError as exc:
        return _account_page(request, user, status=400, error=str(exc))
    return _account_page(request, user, status=201, new_token=secret)  # shown this once, never again


@router.post("/account/tokens/{token_id}/revoke", response_model=None, dependencies=[CsrfChecked])
def account_revoke_token(request: Request, user: Signed, token_id: int) -> Response:
    try:
        accounts_of(request).revoke_api_token(user, token_id)
    except NotFound as exc:
        return _account_page(request, user, status=404, error=str(exc))
    return RedirectResponse("/account?done=revoked", status_code=303)


@router.post("/account/signout-everywhere", dependencies=[CsrfChecked])
def account_signout_everywhere(
    request: Request, user: Signed, revoke_tokens: Annotated[str, Form(max_length=10)] = ""
) -> RedirectResponse:
    accounts_of(request).sign_out_everywhere(user, revoke_tokens=revoke_tokens in ("1", "on", "true"))
    response = RedirectResponse("/signin?done=everywhere", status_code=303)
    clear_session_cookie(response, request)
    return response


def paper_id_of(text: str) -> str:
    """A moderation form's or request's paper id, as stored (:class:`AccountError` when it is none)."""
    from paperfeed.domain.ids import InvalidPaperId, normalize_paper_id

    try:
        return normalize_paper_id(text.strip()).base
    except InvalidPaperId:
        raise AccountError(f"“{text.strip()[:80]}” is not a paper id such as 2503.10613.") from None


# -- JSON API -------------------------------------------------------------------------------------------


class TokenRequest(BaseModel):
    name: str = Field(min_length=1, max_length=100, description="What the token is for.")


class HideRequest(BaseModel):
    paper_id: str = Field(min_length=1, max_length=100)
    reason: str = Field(default="", max_length=500)


def _token_json(token: ApiToken) -> dict[str, Any]:
    return {
        "id": token.id,
        "name": token.name,
        "prefix": token.prefix,
        "createdAt": token.created_at.isoformat(),
        "lastUsedAt": token.last_used_at.isoformat() if token.last_used_at else None,
    }


@api_router.get("/me")
def api_me(user: Signed) -> JsonResponse:
    """Who the token (or session) belongs to."""
    return JsonResponse(
        {
            "id": user.id,
            "email": user.email,
            "displayName": user.display_name,
            "role": user.role,
            "emailVerified": user.email_verified,
        }
    )


@api_router.get("/tokens")
def api_tokens(request: Request, user: Signed) -> JsonResponse:
    """Your personal API tokens (their secrets are never shown again)."""
    return JsonResponse([_token_json(t) for t in accounts_of(request).list_api_tokens(user)])


@api_router.post("/tokens", status_code=201, dependencies=[CsrfChecked])
def api_create_token(
    request: Request, user: SessionSigned, body: Annotated[TokenRequest, Body()]
) -> JsonResponse:
    """Create a token: the ``token`` field of the reply is the only time its secret is shown.

    Only with a session (and its CSRF token): a request authenticated by a Bearer token gets a 403."""
    try:
        token, secret = accounts_of(request).create_api_token(user, body.name)
    except AccountError as exc:
        raise ApiError(400, str(exc)) from None
    return JsonResponse(
        {**_token_json(token), "token": secret}, status_code=201, headers={"Cache-Control": "no-store"}
    )


@api_router.delete("/tokens/{token_id}", status_code=204, dependencies=[CsrfChecked])
def api_revoke_token(request: Request, user: Signed, token_id: int) -> Response:
    """Revoke a token; requests with it fail with 401 from now on."""
    try:
        accounts_of(request).revoke_api_token(user, token_id)
    except NotFound as exc:
        raise ApiError(404, str(exc)) from None
    return Response(status_code=204)


@api_router.post("/admin/hidden-papers", status_code=201, dependencies=[CsrfChecked])
def api_hide_paper(request: Request, admin: Admin, body: Annotated[HideRequest, Body()]) -> JsonResponse:
    """Hide a paper from feeds, search, the API and its page (administrators only)."""
    try:
        changed = accounts_of(request).hide_paper(paper_id_of(body.paper_id), by=admin, reason=body.reason)
    except NotFound as exc:
        raise ApiError(404, str(exc)) from None
    except AccountError as exc:
        raise ApiError(400, str(exc)) from None
    return JsonResponse(
        {"paperId": paper_id_of(body.paper_id), "hidden": True, "changed": changed}, status_code=201
    )


@api_router.delete("/admin/hidden-papers/{paper_id:path}", status_code=204, dependencies=[CsrfChecked])
def api_unhide_paper(request: Request, admin: Admin, paper_id: str) -> Response:
    """Show a hidden paper again (administrators only)."""
    try:
        found = accounts_of(request).unhide_paper(paper_id_of(paper_id))
    except AccountError as exc:
        raise ApiError(400, str(exc)) from None
    if not found:
        raise ApiError(404, f"paper {paper_id[:80]} is not hidden")
    return Response(status_code=204)
