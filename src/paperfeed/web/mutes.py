"""Mute rules on the web: the reader's rules page and API, and :func:`apply_mutes`, which every surface that
lists papers calls once per request on the candidates it holds (docs/groups.md, "Mute rules").

A page that left papers out says how many and links to itself with ``?muted=show``, which shows them
(marked) for that one view; the JSON API answers with ``mutedHidden`` and takes ``muted=show`` as well.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.types import Scope

from paperfeed.domain.accounts import User
from paperfeed.domain.models import Paper
from paperfeed.domain.mutes import KINDS, NO_MUTES, InvalidMuteRule, MuteFilter, MuteRule

from . import rendering
from .deps import accounts_of, app_of
from .errors import ApiError, JsonResponse
from .rendering import error_page
from .security import SESSION_COOKIE, AuthProblem, current_user, redirect_back, require_user, verify_csrf
from .views import PageMeta

__all__ = [
    "MUTABLE",
    "MuteNote",
    "api_router",
    "apply_mutes",
    "reader_has_mutes",
    "reader_mutes",
    "router",
    "showing_muted",
]

router = APIRouter(include_in_schema=False)
api_router = APIRouter(prefix="/api", tags=["mutes"])
SignedIn = Annotated[User, Depends(require_user)]
PRIVATE = "private, no-store"
T = TypeVar("T")
_STATE = "pf_mute_filter"
MUTABLE = "pf_mute_filtered"  # request-state key: the answer is a list a reader's mute rules would filter


@dataclass(frozen=True, slots=True)
class MuteNote:
    """What a page says about the papers it left out: how many, and a link to show (or hide) them."""

    hidden: int
    shown: bool  # the muted papers are on the page (?muted=show)
    url: str  # the same page with the muted papers shown, or hidden again


def _peek_reader(request: Request) -> User | None:
    """The reader the request's credentials name, looked up without recording it in the request's state
    (so an answer that turns out the same for them as for anyone stays shareable); None for none or an
    invalid one (the handler's own sign-in check answers that)."""
    accounts = accounts_of(request)
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        return accounts.user_for_api_token(value.strip()) if value.strip() else None
    session = request.cookies.get(SESSION_COOKIE, "")
    return accounts.user_for_session(session) if session else None


def reader_mutes(request: Request) -> MuteFilter:
    """The asking reader's rules, compiled once per request (none for an anonymous visitor).

    Marks the request's state :data:`MUTABLE`: its answer is a list a reader's rules filter. A reader
    with rules is then recorded as the one who asked (their answer is their own: private, never kept);
    a reader without any gets what anyone gets, which the page cache may share (:mod:`.public_cache`
    asks :func:`reader_has_mutes` before it gives such a copy to a signed-in request)."""
    state = request.scope.setdefault("state", {})
    if _STATE not in state:
        state[MUTABLE] = True
        if "text/html" in request.headers.get("accept", ""):
            # a page names its reader in its header anyway: resolve them once, for both
            try:
                user = current_user(request)
            except AuthProblem:
                user = None
        else:
            user = _peek_reader(request)
        rules = app_of(request).readers.mutes.filter_for(user.id) if user else NO_MUTES
        if rules:
            with contextlib.suppress(AuthProblem):  # none for a reader just found
                current_user(request)
        state[_STATE] = rules
    found: MuteFilter = state[_STATE]
    return found


def reader_has_mutes(scope: Scope) -> bool:
    """Whether the reader a request's credentials name has mute rules (for the page cache: a shared copy
    of a list they would filter is not theirs). Blocking: run it in a thread."""
    request = Request(scope)
    user = _peek_reader(request)
    return bool(user is not None and app_of(request).readers.mutes.filter_for(user.id))


def showing_muted(request: Request) -> bool:
    return request.query_params.get("muted") == "show"


def _toggle_url(request: Request, show: bool) -> str:
    params = [(k, v) for k, v in request.query_params.multi_items() if k != "muted"]
    if show:
        params.append(("muted", "show"))
    return request.url.path + (f"?{urlencode(params)}" if params else "")


def apply_mutes(
    request: Request, items: Sequence[T], paper_of: Callable[[T], Paper]
) -> tuple[list[T], MuteNote | None]:
    """``items`` without the reader's muted papers (all of them with ``?muted=show``), and the note the
    page shows (None when nothing was muted)."""
    rules = reader_mutes(request)
    if not rules:
        return list(items), None
    kept, hidden = rules.split(items, paper_of)
    if not hidden:
        return kept, None
    if showing_muted(request):
        return list(items), MuteNote(hidden, True, _toggle_url(request, False))
    return kept, MuteNote(hidden, False, _toggle_url(request, True))


# -- the rules page -------------------------------------------------------------------------------------

_DONE = {"added": "Mute rule added.", "removed": "Mute rule removed."}
_LABELS = {"author": "Author", "category": "Category", "word": "Word or phrase"}


def _page(request: Request, user: User, *, status: int = 200, error: str | None = None) -> HTMLResponse:
    rules = app_of(request).readers.mutes.rules(user.id)
    return rendering.page(
        request,
        "mutes.html",
        PageMeta("Mute rules", "Mute rules", rendering.absolute_url(request), noindex=True),
        status=status,
        cache=PRIVATE,
        rules=rules,
        labels=_LABELS,
        kinds=KINDS,
        error=error,
        done=_DONE.get(request.query_params.get("done", "")),
    )


@router.get("/mutes", response_class=HTMLResponse)
def mutes_page(request: Request, user: SignedIn) -> HTMLResponse:
    return _page(request, user)


@router.post("/mutes", response_model=None, dependencies=[Depends(verify_csrf)])
def add_form(
    request: Request,
    user: SignedIn,
    kind: Annotated[str, Form(max_length=20)] = "",
    value: Annotated[str, Form(max_length=400)] = "",
    next: Annotated[str, Form(max_length=2000)] = "",
) -> Response:
    try:
        app_of(request).readers.mutes.add(user.id, kind, value)
    except InvalidMuteRule as exc:
        return _page(request, user, status=400, error=str(exc))
    return redirect_back(next, "/mutes", "added")


@router.post("/mutes/remove", response_model=None, dependencies=[Depends(verify_csrf)])
def remove_form(
    request: Request,
    user: SignedIn,
    kind: Annotated[str, Form(max_length=20)] = "",
    value: Annotated[str, Form(max_length=400)] = "",
) -> Response:
    try:
        removed = app_of(request).readers.mutes.remove(user.id, kind, value)
    except InvalidMuteRule as exc:
        return error_page(request, 400, "That did not work", str(exc), headers={"Cache-Control": PRIVATE})
    if not removed:
        return error_page(request, 404, "Not found", "no such mute rule", headers={"Cache-Control": PRIVATE})
    return redirect_back("", "/mutes", "removed")


# -- the API ------------------------------------------------------------------------------------------


class RuleIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: str = Field(max_length=20)
    value: str = Field(max_length=400)


def _rule(rule: MuteRule) -> dict[str, Any]:
    return {"kind": rule.kind, "value": rule.value}


@api_router.get("/me/mutes", summary="Your mute rules", response_class=JsonResponse)
def list_rules(request: Request, user: SignedIn) -> JsonResponse:
    rules = app_of(request).readers.mutes.rules(user.id)
    return JsonResponse([_rule(r) for r in rules], headers={"Cache-Control": PRIVATE})


@api_router.post(
    "/me/mutes", summary="Mute an author, category or word", response_class=JsonResponse, status_code=201,
    dependencies=[Depends(verify_csrf)],
)  # fmt: skip
def add_rule(request: Request, user: SignedIn, body: RuleIn) -> JsonResponse:
    try:
        rule = app_of(request).readers.mutes.add(user.id, body.kind, body.value)
    except InvalidMuteRule as exc:
        raise ApiError(400, str(exc), field=exc.field) from None
    return JsonResponse(_rule(rule), status_code=201, headers={"Cache-Control": PRIVATE})


@api_router.delete(
    "/me/mutes", summary="Unmute", response_class=JsonResponse, dependencies=[Depends(verify_csrf)]
)
def remove_rule(request: Request, user: SignedIn, kind: str = "", value: str = "") -> JsonResponse:
    try:
        removed = app_of(request).readers.mutes.remove(user.id, kind[:20], value[:400])
    except InvalidMuteRule as exc:
        raise ApiError(400, str(exc), field=exc.field) from None
    if not removed:
        raise ApiError(404, "no such mute rule")
    return JsonResponse({"removed": True}, headers={"Cache-Control": PRIVATE})
