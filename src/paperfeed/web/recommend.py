"""The "For you" page (``/for-you``) and ``GET /api/me/recommendations``: a signed-in reader's feed.

Both read :class:`~paperfeed.services.recommend.RecommendationService` and change nothing (GET only). The
page redirects anonymous browsers to sign in; the API answers 401 without a session or Bearer token.
Every item carries its reasons; the page links the saved paper a recommendation resembles.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, Response

from paperfeed.domain.accounts import User
from paperfeed.domain.recommend import Reason, Recommendation
from paperfeed.domain.wording import count
from paperfeed.services.recommend import ForYou, UnknownTag

from . import rendering
from .api import ErrorModel, PaperModel, _Open
from .deps import app_of
from .errors import ApiError, JsonResponse
from .hf_json import daily_item
from .mutes import MuteNote, apply_mutes, reader_mutes
from .rendering import error_page
from .security import require_user
from .views import PageMeta, PaperView, paper_url, paper_view

__all__ = ["api_router", "router"]

router = APIRouter(include_in_schema=False)
api_router = APIRouter(prefix="/api", tags=["recommendations"])

PAGE_SIZE = 30
MAX_TAG_CHARS = 60
Signed = Annotated[User, Depends(require_user)]


def _feed(request: Request, user: User, limit: int, tag: str) -> tuple[ForYou, MuteNote | None]:
    """The reader's feed without their muted papers (asked for twice as many when they mute any)."""
    app = app_of(request)
    name = " ".join(tag.split()) or None
    wanted = limit * 2 if reader_mutes(request) else limit
    feed = app.readers.recommendations.feed(user.id, limit=wanted, tag=name)
    items, muted = apply_mutes(request, feed.items, lambda r: r.paper)
    return replace(feed, items=tuple(items[:limit])), muted


# -- page -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecView:
    card: PaperView
    reasons: tuple[Reason, ...]
    score: float

    def saved_url(self, reason: Reason) -> str | None:
        return paper_url(reason.paper_id) if reason.paper_id else None


def _mode_line(feed: ForYou) -> str:
    if feed.mode == "model":
        source = f"the tag “{feed.tag}”" if feed.tag else "your library"
        return (
            f"Ranked by a model trained on the {count(feed.positives, 'paper')} in {source} against "
            "random recent "
            "papers and the ones you marked “not interested”."
        )
    return ""  # cold start: the feed's message says how it is ranked and what to do


@router.get("/for-you", response_class=HTMLResponse)
def for_you_page(request: Request, user: Signed, tag: str = "") -> HTMLResponse:
    if len(tag) > MAX_TAG_CHARS:
        return error_page(
            request, 400, "Tag name too long", f"A tag name has at most {count(MAX_TAG_CHARS, 'character')}."
        )
    try:
        feed, muted = _feed(request, user, PAGE_SIZE, tag)
    except UnknownTag as exc:
        return error_page(
            request, 404, "No such tag", f"{exc}. Pick one of your tags, or all of your papers."
        )
    items = [RecView(paper_view(r.paper), r.reasons, r.score) for r in feed.items]
    page = PageMeta(
        "For you",
        "Recent papers ranked for you.",
        str(request.base_url).rstrip("/") + "/for-you",
        noindex=True,
    )
    return rendering.page(
        request,
        "recommend/for_you.html",
        page,
        nav="for-you",
        cache="private, no-store",
        feed=feed,
        items=items,
        mode_line=_mode_line(feed),
        muted=muted,
        picked=app_of(request).catalogue.topic_picks.picked(user.id),
    )


# -- API ------------------------------------------------------------------------------------------------


class ReasonModel(_Open):
    kind: str  # similar | author | alert | topic | trending
    text: str
    paperId: str | None = None  # the saved paper it resembles (kind "similar")
    topicId: int | None = None  # the picked topic it came from (kind "topic")


class RecommendationItem(_Open):
    paper: PaperModel
    title: str
    summary: str
    score: float
    reason: str
    reasons: list[ReasonModel]


class Window(_Open):
    start: str  # first day, YYYY-MM-DD
    end: str  # last day


class RecommendationsModel(_Open):
    mode: str  # model | similarity | topics | trending
    message: str | None = None
    tag: str | None = None
    tags: list[str]
    positives: int
    window: Window
    items: list[RecommendationItem]
    mutedHidden: int = 0  # papers left out by the reader's mute rules (docs/groups.md)


def _item(rec: Recommendation) -> dict[str, Any]:
    item = daily_item(rec.paper)
    item["score"] = rec.score
    item["reason"] = rec.reason
    item["reasons"] = [
        {"kind": r.kind, "text": r.text, "paperId": r.paper_id, "topicId": r.topic_id} for r in rec.reasons
    ]
    return item


@api_router.get(
    "/me/recommendations",
    response_model=RecommendationsModel,
    responses={
        400: {"model": ErrorModel, "description": "Invalid parameter"},
        401: {"model": ErrorModel, "description": "No session or API token"},
        404: {"model": ErrorModel, "description": "No saved paper under that tag"},
    },
    summary="The signed-in reader's “For you” feed, each paper with the reasons it is there",
)
def recommendations_api(
    request: Request,
    user: Signed,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    tag: Annotated[str, Query(max_length=MAX_TAG_CHARS)] = "",
) -> Response:
    try:
        feed, muted = _feed(request, user, limit, tag)
    except UnknownTag as exc:
        raise ApiError(404, str(exc)) from None
    body = {
        "mode": feed.mode,
        "message": feed.message,
        "tag": feed.tag,
        "tags": list(feed.tags),
        "positives": feed.positives,
        "window": {"start": feed.window[0].isoformat(), "end": feed.window[1].isoformat()},
        "items": [_item(r) for r in feed.items],
        "mutedHidden": 0 if muted is None or muted.shown else muted.hidden,
    }
    return JsonResponse(body, headers={"Cache-Control": "private, no-store"})
