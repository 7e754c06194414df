"""JSON API of the community features. Writes need a signed-in reader: a Bearer token, or the session
cookie plus the ``X-CSRF-Token`` header (see :mod:`.security`).

=========================================  ===============================================================
``POST   /api/papers/{id}/upvote``         upvote (idempotent) → the paper's vote state
``DELETE /api/papers/{id}/upvote``         take the upvote back (idempotent) → the vote state
``GET    /api/papers/{id}/upvoters``       ``limit`` ≤ 1000, ``offset`` → readers who upvoted, newest first
``POST   /api/papers/submit``              ``{"id": "arXiv id or URL"}`` → 201 submitted, 200 already listed
``GET    /api/papers/{id}/comments``       the paper's comments, oldest first
``POST   /api/papers/{id}/comments``       ``{"body": "Markdown"}`` → 201 the comment
``GET    /api/comments/{cid}``             one comment
``PATCH  /api/comments/{cid}``             ``{"body": …}``: edit your own comment
``DELETE /api/comments/{cid}``             delete your own comment → 204
``POST   /api/comments/{cid}/hide``        administrators: hide a comment (``/unhide`` shows it again)
=========================================  ===============================================================

``upvotes`` is what every page shows and every ranking sorts by: Hugging Face's imported count plus this
instance's readers' votes (``importedUpvotes`` + ``localUpvotes``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from paperfeed.domain.accounts import User
from paperfeed.domain.community import MAX_COMMENT_CHARS, Comment, Submission, VoteState

from .community_params import CommentId, comment_html
from .deps import app_of, community_of
from .errors import ApiError, JsonResponse
from .hf_json import hf_time, paper_object
from .security import current_user, require_user, verify_csrf

__all__ = ["router"]

router = APIRouter(tags=["community"])
CsrfChecked = Depends(verify_csrf)
SignedIn = Annotated[User, Depends(require_user)]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class VoteModel(_Open):
    id: str
    upvotes: int = Field(description="Shown and ranked count: importedUpvotes + localUpvotes.")
    importedUpvotes: int | None = Field(description="Hugging Face's count as last imported.")
    localUpvotes: int = Field(description="Votes of this instance's readers.")
    upvoted: bool = Field(description="Whether the caller's vote is among them.")


class Reader(_Open):
    name: str


class UpvoterModel(_Open):
    user: Reader
    upvotedAt: str


class UpvotersModel(_Open):
    id: str
    total: int
    upvoters: list[UpvoterModel]


class CommentModel(_Open):
    id: int
    paperId: str
    author: Reader
    body: str = Field(description="Markdown source.")
    html: str = Field(description="Rendered, sanitised HTML.")
    createdAt: str
    editedAt: str | None = None
    hidden: bool


class SubmitBody(BaseModel):
    id: str = Field(
        min_length=1, max_length=500, description="arXiv id or URL (abs/pdf/versioned/old style)."
    )


class SubmitModel(_Open):
    paper: dict[str, Any]
    created: bool
    fetched: bool
    submittedOnDailyAt: str | None = None
    submittedOnDailyBy: Reader | None = None


class CommentBody(BaseModel):
    body: str = Field(min_length=1, max_length=MAX_COMMENT_CHARS * 4)


_WRITE_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"description": "Not signed in (no or revoked token)"},
    403: {"description": "CSRF check failed, or not allowed"},
    404: {"description": "Unknown paper or comment"},
}


def _vote(state: VoteState) -> dict[str, Any]:
    return {
        "id": state.paper_id,
        "upvotes": state.shown,
        "importedUpvotes": state.imported,
        "localUpvotes": state.local,
        "upvoted": state.upvoted,
    }


def _comment(request: Request, comment: Comment) -> dict[str, Any]:
    return {
        "id": comment.id,
        "paperId": comment.paper_id,
        "author": {"name": comment.author},
        "body": comment.body,
        "html": str(comment_html(request, comment.body)),
        "createdAt": hf_time(comment.created_at),
        "editedAt": hf_time(comment.edited_at) if comment.edited_at else None,
        "hidden": comment.hidden_at is not None,
    }


def _submitter(submission: Submission | None) -> dict[str, str] | None:
    return {"name": submission.name} if submission is not None and submission.name else None


# -- upvotes --------------------------------------------------------------------------------------------


@router.post(
    "/api/papers/{paper_id:path}/upvote",
    response_model=VoteModel,
    responses=_WRITE_ERRORS,
    dependencies=[CsrfChecked],
    summary="Upvote a paper (once per reader; again changes nothing)",
)
def upvote(request: Request, user: SignedIn, paper_id: str) -> Response:
    return JsonResponse(_vote(community_of(request).upvote(user, paper_id)))


@router.delete(
    "/api/papers/{paper_id:path}/upvote",
    response_model=VoteModel,
    responses=_WRITE_ERRORS,
    dependencies=[CsrfChecked],
    summary="Take your upvote back",
)
def unvote(request: Request, user: SignedIn, paper_id: str) -> Response:
    return JsonResponse(_vote(community_of(request).unvote(user, paper_id)))


@router.get(
    "/api/papers/{paper_id:path}/upvoters",
    response_model=UpvotersModel,
    responses={404: _WRITE_ERRORS[404]},
    summary="Readers of this instance who upvoted a paper, newest first (hidden readers left out)",
)
def upvoters(
    request: Request,
    paper_id: str,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> Response:
    pid, voters, total = community_of(request).upvoters(paper_id, limit=limit, offset=offset)
    return JsonResponse(
        {
            "id": pid,
            "total": total,
            "upvoters": [{"user": {"name": v.name}, "upvotedAt": hf_time(v.upvoted_at)} for v in voters],
        }
    )


# -- submissions ----------------------------------------------------------------------------------------


@router.post(
    "/api/papers/submit",
    response_model=SubmitModel,
    status_code=201,
    responses={
        **_WRITE_ERRORS,
        200: {"model": SubmitModel, "description": "Already on a daily feed: nothing changed"},
        400: {"description": "Not an arXiv id or URL"},
        404: {"description": "arXiv has no such paper"},
        429: {"description": "Daily submission cap reached (Retry-After says until when)"},
        502: {"description": "arXiv could not be reached"},
    },
    dependencies=[CsrfChecked],
    summary="Submit a paper to today's feed by arXiv id or URL (fetched from arXiv when new here)",
)
def submit(request: Request, user: SignedIn, body: SubmitBody) -> Response:
    result = community_of(request).submit(user, body.id)
    detail = app_of(request).catalogue.feeds.paper(result.paper_id)
    if detail is None:  # hidden or gone between the two calls
        raise ApiError(404, f"paper {result.paper_id} is not in this paperfeed instance")
    out = {
        "paper": paper_object(detail.paper, listed_on=result.day),
        "created": result.created,
        "fetched": result.fetched,
        "submittedOnDailyAt": hf_time(result.day) if result.day else None,
        "submittedOnDailyBy": _submitter(result.submission),
    }
    return JsonResponse(out, status_code=201 if result.created else 200)


# -- comments -------------------------------------------------------------------------------------------


def _viewer(request: Request) -> User | None:
    return current_user(request)


@router.get(
    "/api/papers/{paper_id:path}/comments",
    response_model=list[CommentModel],
    responses={404: _WRITE_ERRORS[404]},
    summary="A paper's comments, oldest first",
)
def list_comments(request: Request, paper_id: str) -> Response:
    _, comments = community_of(request).comments(paper_id, _viewer(request))
    return JsonResponse([_comment(request, c) for c in comments])


@router.post(
    "/api/papers/{paper_id:path}/comments",
    response_model=CommentModel,
    status_code=201,
    responses={**_WRITE_ERRORS, 429: {"description": "Hourly comment cap reached"}},
    dependencies=[CsrfChecked],
    summary="Comment on a paper (Markdown; raw HTML is shown as text)",
)
def add_comment(request: Request, user: SignedIn, paper_id: str, body: CommentBody) -> Response:
    made = community_of(request).add_comment(user, paper_id, body.body)
    return JsonResponse(_comment(request, made), status_code=201)


@router.get(
    "/api/comments/{comment_id}",
    response_model=CommentModel,
    responses={404: _WRITE_ERRORS[404]},
    summary="One comment",
)
def get_comment(request: Request, comment_id: CommentId) -> Response:
    return JsonResponse(_comment(request, community_of(request).comment(comment_id, _viewer(request))))


@router.patch(
    "/api/comments/{comment_id}",
    response_model=CommentModel,
    responses=_WRITE_ERRORS,
    dependencies=[CsrfChecked],
    summary="Edit your own comment",
)
def edit_comment(request: Request, user: SignedIn, comment_id: CommentId, body: CommentBody) -> Response:
    return JsonResponse(_comment(request, community_of(request).edit_comment(user, comment_id, body.body)))


@router.delete(
    "/api/comments/{comment_id}",
    status_code=204,
    responses=_WRITE_ERRORS,
    dependencies=[CsrfChecked],
    summary="Delete your own comment",
)
def delete_comment(request: Request, user: SignedIn, comment_id: CommentId) -> Response:
    community_of(request).delete_comment(user, comment_id)
    return Response(status_code=204)


@router.post(
    "/api/comments/{comment_id}/hide",
    response_model=CommentModel,
    responses=_WRITE_ERRORS,
    dependencies=[CsrfChecked],
    summary="Administrators: hide a comment from everyone else",
)
def hide_comment(request: Request, user: SignedIn, comment_id: CommentId) -> Response:
    return JsonResponse(_comment(request, community_of(request).set_comment_hidden(user, comment_id, True)))


@router.post(
    "/api/comments/{comment_id}/unhide",
    response_model=CommentModel,
    responses=_WRITE_ERRORS,
    dependencies=[CsrfChecked],
    summary="Administrators: show a hidden comment again",
)
def unhide_comment(request: Request, user: SignedIn, comment_id: CommentId) -> Response:
    return JsonResponse(_comment(request, community_of(request).set_comment_hidden(user, comment_id, False)))
