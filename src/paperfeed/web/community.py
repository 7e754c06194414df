"""Community pages and forms: upvote buttons, the upvoters list, submitting a paper, comments.

Every state change is a POST form checked by :func:`~.security.verify_csrf` that redirects back (303) to
the page it came from, so everything works without JavaScript. Anonymous visitors get plain links to the
sign-in page instead of forms, so their pages stay free of cookies (and cacheable).

The JSON API for the same actions is in :mod:`.community_api`; both call
:class:`~paperfeed.services.community.CommunityService`, whose errors
(:class:`~paperfeed.domain.community.CommunityError`) become error pages or JSON here (:func:`install`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import pass_context
from markupsafe import Markup

from paperfeed.domain.accounts import User
from paperfeed.domain.community import CommunityError, InvalidComment, LimitReached, Submission

from . import community_api, rendering
from .community_params import CommentId, comment_html
from .deps import app_of, community_of
from .errors import error_response
from .rendering import NO_STORE, error_page, page_paper_ids
from .security import current_user, here, redirect_back, require_user, template_request, verify_csrf
from .views import PageNumber, day_label, paper_url, plural

__all__ = ["TEMPLATE_GLOBALS", "CommentView", "comment_view", "install", "router"]

router = APIRouter(include_in_schema=False)
CsrfChecked = Depends(verify_csrf)
SignedIn = Annotated[User, Depends(require_user)]
NextField = Annotated[str, Form(max_length=2000)]
BodyField = Annotated[str, Form(max_length=40_000)]
UPVOTERS_PAGE = 100
_VOTED = "pf_community_voted"  # request-state key: {paper_id: voted} for the signed-in reader


def _viewer(request: Request) -> User | None:
    try:
        return current_user(request)
    except Exception:  # a bad Bearer token on a page: render it for nobody in particular
        return None


def _here(request: Request) -> str:
    return here(request)  # without a redirect's one-time ``done``: never copied into the next form


# -- what templates show --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CommentView:
    id: int
    anchor: str  # the element id, e.g. "comment-12"
    author: str
    html: Markup  # rendered and sanitised Markdown
    created_iso: str
    created_label: str
    edited_label: str | None
    hidden: bool
    mine: bool


def _stamp(value: datetime) -> str:
    return f"{day_label(value)}, {value:%H:%M} UTC"


def comment_view(request: Request, comment: Any, viewer: User | None) -> CommentView:
    return CommentView(
        id=comment.id,
        anchor=f"comment-{comment.id}",
        author=comment.author,
        html=comment_html(request, comment.body),
        created_iso=comment.created_at.isoformat(),
        created_label=_stamp(comment.created_at),
        edited_label=_stamp(comment.edited_at) if comment.edited_at else None,
        hidden=comment.hidden_at is not None,
        mine=viewer is not None and viewer.id == comment.user_id,
    )


@dataclass(frozen=True, slots=True)
class CommentsSection:
    paper_id: str
    items: list[CommentView]
    count_label: str
    signed_in: bool
    is_admin: bool
    post_url: str
    signin_url: str
    upvoters_url: str


@pass_context
def _community_voted(ctx: Any, paper_id: str) -> bool | None:
    """Whether the signed-in reader upvoted ``paper_id`` (None for anonymous visitors: no form)."""
    request = template_request(ctx)
    user = _viewer(request)
    if user is None:
        return None
    state = request.scope.setdefault("state", {})
    known: dict[str, bool] = state.setdefault(_VOTED, {})
    if paper_id not in known:  # the first card asks for every card of the page: one query, not one a card
        asked = [pid for pid in dict.fromkeys([paper_id, *page_paper_ids(request)]) if pid not in known]
        voted = community_of(request).voted_among(user, asked)
        known.update((pid, pid in voted) for pid in asked)
    return known[paper_id]


@pass_context
def _community_here(ctx: Any) -> str:
    return _here(template_request(ctx))


@pass_context
def _community_comments(ctx: Any, paper_id: str) -> CommentsSection:
    request = template_request(ctx)
    user = _viewer(request)
    try:
        pid, comments = community_of(request).comments(paper_id, user)
    except CommunityError:
        pid, comments = paper_id, []
    visible = sum(1 for c in comments if c.hidden_at is None)
    return CommentsSection(
        paper_id=pid,
        items=[comment_view(request, c, user) for c in comments],
        count_label=plural(visible, "comment"),
        signed_in=user is not None,
        is_admin=user is not None and user.is_admin,
        post_url=paper_url(pid) + "/comments",
        signin_url="/signin?next=" + paper_url(pid) + "%23comments",
        upvoters_url=paper_url(pid) + "/upvoters",
    )


@pass_context
def _community_submission(ctx: Any, paper_id: str) -> Submission | None:
    return community_of(template_request(ctx)).submission(paper_id)


# Registered on the app's renderer by create_app.
TEMPLATE_GLOBALS: Mapping[str, Callable[..., Any]] = {
    "community_voted": _community_voted,
    "community_here": _community_here,
    "community_comments": _community_comments,
    "community_submission": _community_submission,
    "day_label": day_label,
}


# -- upvotes --------------------------------------------------------------------------------------------


@router.post("/papers/{paper_id:path}/upvote", response_model=None, dependencies=[CsrfChecked])
def upvote_form(request: Request, user: SignedIn, paper_id: str, next: NextField = "") -> Response:
    state = community_of(request).upvote(user, paper_id)
    return redirect_back(next, paper_url(state.paper_id))


@router.post("/papers/{paper_id:path}/upvote/delete", response_model=None, dependencies=[CsrfChecked])
def unvote_form(request: Request, user: SignedIn, paper_id: str, next: NextField = "") -> Response:
    state = community_of(request).unvote(user, paper_id)
    return redirect_back(next, paper_url(state.paper_id))


@router.get("/papers/{paper_id:path}/upvoters", response_class=HTMLResponse)
def upvoters_page(request: Request, paper_id: str, page: PageNumber = 1) -> HTMLResponse:
    number = page
    community = community_of(request)
    pid, voters, total = community.upvoters(
        paper_id, limit=UPVOTERS_PAGE, offset=(number - 1) * UPVOTERS_PAGE
    )
    paper = app_of(request).catalogue.feeds.paper(pid)
    title = paper.paper.title if paper else pid
    state = community.votes(pid)
    last = max(1, -(-total // UPVOTERS_PAGE))
    base = paper_url(pid) + "/upvoters"
    return rendering.page(
        request,
        "community/upvoters.html",
        f"Upvoters of {pid}",
        paper_id=pid,
        paper_title=title,
        paper_link=paper_url(pid),
        voters=[(v.name, v.upvoted_at.date().isoformat(), day_label(v.upvoted_at)) for v in voters],
        local_label=plural(total, "reader"),
        imported=state.imported,
        shown=state.shown,
        prev_url=f"{base}?page={number - 1}" if number > 1 else None,
        next_url=f"{base}?page={number + 1}" if number < last else None,
    )


# -- submissions ----------------------------------------------------------------------------------------


def _submit_page(
    request: Request, user: User, *, value: str = "", error: str | None = None, status: int = 200
) -> HTMLResponse:
    community = community_of(request)
    used = community.submitted_today(user)
    cap = community.limits.submissions_per_day
    return rendering.page(
        request,
        "community/submit.html",
        "Submit a paper",
        status=status,
        cache=NO_STORE,
        nav="submit",
        value=value,
        error=error,
        cap=cap,
        left=max(0, cap - used),
    )


@router.get("/submit", response_class=HTMLResponse)
def submit_page(request: Request, user: SignedIn) -> HTMLResponse:
    return _submit_page(request, user)


@router.post("/submit", response_model=None, dependencies=[CsrfChecked])
def submit_form(
    request: Request, user: SignedIn, paper: Annotated[str, Form(max_length=500)] = ""
) -> Response:
    try:
        result = community_of(request).submit(user, paper)
    except CommunityError as exc:
        response = _submit_page(request, user, value=paper[:500], error=str(exc), status=exc.status)
        if isinstance(exc, LimitReached):
            response.headers["Retry-After"] = str(exc.retry_after)
        return response
    done = "submitted" if result.created else "already"
    return RedirectResponse(f"{paper_url(result.paper_id)}?{done}=1", status_code=303)


# -- comments -------------------------------------------------------------------------------------------


def _comment_url(paper_id: str, comment_id: CommentId | None = None) -> str:
    return paper_url(paper_id) + (f"#comment-{comment_id}" if comment_id else "#comments")


@router.post("/papers/{paper_id:path}/comments", response_model=None, dependencies=[CsrfChecked])
def comment_form(request: Request, user: SignedIn, paper_id: str, body: BodyField = "") -> Response:
    made = community_of(request).add_comment(user, paper_id, body)
    comment_html(request, made.body)  # rendered now, once, not by the next reader's request
    return RedirectResponse(_comment_url(made.paper_id, made.id), status_code=303)


@router.get("/comments/{comment_id}/edit", response_class=HTMLResponse)
def edit_comment_page(request: Request, user: SignedIn, comment_id: CommentId) -> HTMLResponse:
    found = community_of(request).comment(comment_id, user)
    if found.user_id != user.id:
        return error_page(request, 403, "Not allowed", "You can only edit your own comments.")
    return rendering.page(
        request,
        "community/edit_comment.html",
        "Edit your comment",
        cache=NO_STORE,
        comment=comment_view(request, found, user),
        body=found.body,
        paper_link=paper_url(found.paper_id),
        cancel_url=_comment_url(found.paper_id, found.id),
    )


@router.post("/comments/{comment_id}/edit", response_model=None, dependencies=[CsrfChecked])
def edit_comment_form(
    request: Request, user: SignedIn, comment_id: CommentId, body: BodyField = ""
) -> Response:
    done = community_of(request).edit_comment(user, comment_id, body)
    comment_html(request, done.body)
    return RedirectResponse(_comment_url(done.paper_id, done.id), status_code=303)


@router.post("/comments/{comment_id}/delete", response_model=None, dependencies=[CsrfChecked])
def delete_comment_form(request: Request, user: SignedIn, comment_id: CommentId) -> Response:
    gone = community_of(request).delete_comment(user, comment_id)
    return RedirectResponse(_comment_url(gone.paper_id), status_code=303)


@router.post("/comments/{comment_id}/hide", response_model=None, dependencies=[CsrfChecked])
def hide_comment_form(request: Request, user: SignedIn, comment_id: CommentId) -> Response:
    done = community_of(request).set_comment_hidden(user, comment_id, True)
    return RedirectResponse(_comment_url(done.paper_id, done.id), status_code=303)


@router.post("/comments/{comment_id}/unhide", response_model=None, dependencies=[CsrfChecked])
def unhide_comment_form(request: Request, user: SignedIn, comment_id: CommentId) -> Response:
    done = community_of(request).set_comment_hidden(user, comment_id, False)
    return RedirectResponse(_comment_url(done.paper_id, done.id), status_code=303)


# -- errors ---------------------------------------------------------------------------------------------

_HEADINGS = {404: "Not found", 403: "Not allowed", 429: "Too many at once", 502: "arXiv is not answering"}


def _wants_page(request: Request) -> bool:
    if request.url.path.startswith("/api/") or request.headers.get("authorization"):
        return False
    return "text/html" in request.headers.get("accept", "")


async def _community_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, CommunityError)
    headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, LimitReached) else {}
    message = str(exc)
    extra: dict[str, Any] = {"retry_after": exc.retry_after} if isinstance(exc, LimitReached) else {}
    if isinstance(exc, InvalidComment):  # name the field, as validation errors do
        extra["errors"] = [{"param": exc.param, "message": message}]
        message = f"{exc.param}: {message}"
    if _wants_page(request):
        heading = _HEADINGS.get(exc.status, "That did not work")
        return error_page(request, exc.status, heading, message, headers=headers)
    return error_response(request, exc.status, message, headers=headers, **extra)


def install(app: FastAPI) -> None:
    """Register the community pages and API (before the catch-all paper routes) and their error replies."""
    app.add_exception_handler(CommunityError, _community_error)
    app.include_router(community_api.router)
    app.include_router(router)
