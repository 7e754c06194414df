"""The reader's data export and account deletion (see ``services/account_data.py`` for the rules).

- ``POST /account/export`` (the account page's button, CSRF-checked) and ``GET /api/me/export`` (Bearer
  token or session; reading only, so a GET) answer the zip as a download, never cached.
- ``GET /account/delete`` shows what deletion removes and asks for the current password, or, for an
  account without one, offers to mail a confirmation link (``POST /account/delete/mail``) that leads
  back to the same page with the link's token.
- ``POST /account/delete`` (CSRF-checked) deletes, ends the browser's session and redirects to
  ``/account/deleted``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from paperfeed.domain.accounts import AccountError, InvalidLink, NotFound, RateLimited, User
from paperfeed.services.account_data import AccountDataService, ExportArchive

from .auth import account_page
from .deps import app_of
from .errors import ApiError
from .security import clear_session_cookie, link_base_url, require_user, verify_csrf

__all__ = ["api_router", "router"]

router = APIRouter(include_in_schema=False)
api_router = APIRouter(prefix="/api", tags=["accounts"])

Signed = Annotated[User, Depends(require_user)]
CsrfChecked = Depends(verify_csrf)
_DELETED = "Your account and everything kept with it are deleted, and you are signed out."


def _service(request: Request) -> AccountDataService:
    return app_of(request).readers.account_data


def _download(archive: ExportArchive) -> Response:
    return Response(
        archive.content,
        media_type="application/zip",
        headers={
            "Content-Disposition": f'attachment; filename="{archive.filename}"',
            "Cache-Control": "private, no-store",
            "X-Content-Type-Options": "nosniff",
        },
    )


@router.post("/account/export", dependencies=[CsrfChecked])
def account_export(request: Request, user: Signed) -> Response:
    """Download everything kept about the signed-in reader as a zip."""
    try:
        return _download(_service(request).export(user))
    except NotFound as exc:  # deleted by another request meanwhile
        raise HTTPException(404, str(exc)) from None


@api_router.get("/me/export", response_class=Response)
def api_export(request: Request, user: Signed) -> Response:
    """Your data as a zip: account.json, library.json, library.bib, comments.json, upvotes.json,
    submissions.json and subscriptions.json (never a password hash, token or other secret)."""
    try:
        return _download(_service(request).export(user))
    except NotFound as exc:
        raise ApiError(404, str(exc)) from None


def _delete_page(
    request: Request,
    user: User,
    *,
    status: int = 200,
    token: str = "",
    error: str | None = None,
    **extra: Any,
) -> HTMLResponse:
    service = _service(request)
    has_password = service.has_password(user)
    token_ok = not has_password and service.deletion_link_usable(user, token)
    return account_page(
        request,
        "delete",
        "Delete your account",
        status=status,
        user=user,
        has_password=has_password,
        token=token if token_ok else "",
        token_ok=token_ok,
        bad_link=bool(token) and not has_password and not token_ok,
        error=error,
        **extra,
    )


@router.get("/account/delete", response_class=HTMLResponse)
def delete_page(request: Request, user: Signed, token: str = "") -> HTMLResponse:
    return _delete_page(request, user, token=token[:200])


@router.post("/account/delete/mail", response_class=HTMLResponse, dependencies=[CsrfChecked])
def delete_mail(request: Request, user: Signed) -> HTMLResponse:
    service = _service(request)
    if service.has_password(user):
        return _delete_page(request, user, status=400, error="Your account has a password: type it below.")
    try:
        service.mail_deletion_link(user, link_base_url(request))
    except RateLimited as exc:
        response = _delete_page(request, user, status=429, error=str(exc))
        response.headers["Retry-After"] = str(exc.retry_after)
        return response
    except AccountError as exc:
        return _delete_page(request, user, status=503, error=str(exc))
    return account_page(
        request,
        "delete",
        "Delete your account",
        user=user,
        has_password=False,
        token="",
        token_ok=False,
        bad_link=False,
        done=f"A confirmation link is on its way to {user.email}. It works once, for 30 minutes.",
    )


@router.post("/account/delete", response_model=None, dependencies=[CsrfChecked])
def delete_account(
    request: Request,
    user: Signed,
    password: Annotated[str, Form(max_length=2000)] = "",
    token: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    try:
        _service(request).delete_account(user, password=password, token=token)
    except RateLimited as exc:
        response = _delete_page(request, user, status=429, error=str(exc))
        response.headers["Retry-After"] = str(exc.retry_after)
        return response
    except InvalidLink:
        return _delete_page(request, user, status=400, token=token or "-")
    except AccountError as exc:
        return _delete_page(request, user, status=400, error=str(exc))
    gone = RedirectResponse("/account/deleted", status_code=303)
    clear_session_cookie(gone, request)
    return gone


@router.get("/account/deleted", response_class=HTMLResponse)
def deleted_page(request: Request) -> HTMLResponse:
    return account_page(request, "deleted", "Account deleted", notice=_DELETED)
