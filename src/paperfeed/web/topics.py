"""Topic pages and their JSON API (issue #17; how topics are made: docs/topics.md).

=============================  ===================================================================
``GET /topics``                every topic, biggest first: label, size, top words, a sparkline of
                               its last 26 weeks, and the topics rising this week
``GET /topics/{id}``           a topic's papers (ranked like the feed), its papers-per-week plot and
                               its neighbouring topics; a removed id redirects (301) to its
                               successor, an unknown one is 404
``GET /api/topics``            ``{"build", "topics": [... "level", "parent_id", "weeks"], "rising"}``;
                               ``?level=0`` (fine, the default), ``1`` (coarse) or ``all``
``GET /api/topics/{id}``       ``{"topic", "papers", "weeks", "neighbours"}``; ``limit`` ≤ 100,
                               ``offset``; removed → 301 to the successor, unknown → 404
``POST /topics/{id}/pick``     (form, CSRF) pick a topic for "For you"; ``/unpick`` removes it;
                               303 back to ``next``; a removed id picks its successor, unknown → 404
``GET /api/me/topics``         the signed-in reader's picked topics (session or Bearer token)
``PUT /api/me/topics/{id}``    pick (200, the picks); ``DELETE`` unpick (404 when not picked)
=============================  ===================================================================

The plots are SVG written by :mod:`.plots` on the server: the pages need no JavaScript. A signed-in
reader sees a pick button on both pages; anonymous pages stay the same for everyone.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from paperfeed.domain.accounts import User
from paperfeed.domain.topic_picks import PickedTopic, UnknownTopic
from paperfeed.domain.topics import Topic, WeekCount, week_of
from paperfeed.domain.wording import count
from paperfeed.services.topic_picks import TopicPickService
from paperfeed.services.topics import TopicService, TopicsOverview

from . import rendering
from .deps import app_of, topics_of
from .errors import ApiError, JsonResponse
from .hf_json import paper_object
from .plots import sparkline, trend_plot
from .rendering import absolute_url, error_page
from .security import current_user, redirect_back, require_user, verify_csrf
from .views import PageMeta, day_label, paper_view, plural

__all__ = ["api_router", "router"]

router = APIRouter(tags=["pages"])
api_router = APIRouter(tags=["topics"])
Topics = Annotated[TopicService, Depends(topics_of)]
Signed = Annotated[User, Depends(require_user)]
CsrfChecked = [Depends(verify_csrf)]  # before who: without the token it is a 403 for anyone (authz matrix)
SPARK_WEEKS = 26
PAGE_SIZE = 30
MAX_LIMIT = 100


def _id(raw: str) -> int | None:
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 10 else None  # not "²"


def _picks_of(request: Request) -> TopicPickService:
    return app_of(request).catalogue.topic_picks


def _picked_ids(request: Request) -> frozenset[int] | None:
    """The signed-in reader's picked topic ids; None for an anonymous reader (no pick buttons)."""
    user = current_user(request)
    return None if user is None else _picks_of(request).picked_ids(user.id)


def week_label(weeks: dict[int, list[WeekCount]], today: date) -> str:
    """``the week of 17 Nov 2026``: the last week the sparklines show (that of the site's "now")."""
    last = next((series[-1].week for series in weeks.values() if series), week_of(today))
    return f"the week of {day_label(last)}"


def _week_json(w: WeekCount) -> dict[str, Any]:
    return {"week": w.week.isoformat(), "papers": w.papers, "upvotes": w.upvotes}


def _topic_json(t: Topic) -> dict[str, Any]:
    return {
        "id": t.id,
        "label": t.label,
        "words": list(t.words),
        "size": t.size,
        "representatives": list(t.representatives),
        "url": f"/topics/{t.id}",
        "level": t.level,
        "parent_id": t.parent_id,
    }


def _overview_json(o: TopicsOverview) -> dict[str, Any]:
    build = None
    if o.build is not None:
        b = o.build
        build = {
            "generation": b.generation,
            "builtAt": b.built_at.isoformat(),
            "model": b.model_id,
            "method": b.method,
            "papers": b.papers,
            "topics": b.topics,
            "coarseTopics": b.coarse,
        }
    return {
        "build": build,
        "topics": [
            _topic_json(t) | {"weeks": [_week_json(w) for w in o.weeks.get(t.id, [])]} for t in o.topics
        ],
        "rising": [
            {"id": r.topic_id, "papers": r.papers, "share": r.share, "before": r.before, "score": r.score}
            for r in o.rising
        ],
    }


# -- pages --------------------------------------------------------------------------------------------------


@router.get("/topics", response_class=HTMLResponse, include_in_schema=False)
def topics_page(request: Request, topics: Topics) -> HTMLResponse:
    overview = topics.overview(weeks=SPARK_WEEKS)
    labels = {t.id: t.label for t in overview.topics}
    rows = [
        {
            "topic": t,
            "spark": sparkline(
                [w.papers for w in overview.weeks.get(t.id, [])],
                label=f"{t.label}: papers per week, last {count(SPARK_WEEKS, 'week')}",
            ),
        }
        for t in overview.topics
    ]
    rising = [(r, labels[r.topic_id]) for r in overview.rising[:5] if r.topic_id in labels]
    meta = PageMeta(
        "Topics",
        f"{plural(len(rows), 'topic')} of the papers of this instance, with their weekly volume.",
        absolute_url(request, "/topics"),
    )
    built = overview.build is not None
    return rendering.page(
        request,
        "topics.html",
        meta,
        nav="topics",
        headers=None if built else rendering.WAITING_HEADERS,
        outlook=None if built else app_of(request).maintenance.topic_outlook.outlook().sentences(),
        rows=rows,
        build=overview.build,
        rising=rising,
        picked=_picked_ids(request),
        until=week_label(overview.weeks, overview.now.today),
        now_note=overview.now.note(),
    )


@router.get("/topics/{topic_ref}", response_class=HTMLResponse, include_in_schema=False)
def topic_page(
    request: Request, topic_ref: str, topics: Topics, page: Annotated[int, Query(ge=1, le=1000)] = 1
) -> Response:
    topic_id = _id(topic_ref)
    view = (
        topics.page(topic_id, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
        if topic_id is not None
        else None
    )
    if view is None:
        successor = topics.successor(topic_id) if topic_id is not None else None
        if successor is not None and successor != topic_id:
            return RedirectResponse(f"/topics/{successor}", status_code=301)
        return error_page(request, 404, "No such topic", f"There is no topic {topic_ref[:40]!r} (any more).")
    t = view.topic
    plot = trend_plot(
        [w.week for w in view.weeks],
        [w.papers for w in view.weeks],
        [w.upvotes for w in view.weeks],
        label=f"{t.label}: papers and upvotes per week",
    )
    meta = PageMeta(
        f"Topic: {t.label}",
        f"{plural(t.size, 'paper')} about {', '.join(t.words[:6])}.",
        absolute_url(request, f"/topics/{t.id}"),
    )
    more = page * PAGE_SIZE < t.size
    return rendering.page(
        request,
        "topic.html",
        meta,
        nav="topics",
        topic=t,
        plot=plot,
        papers=[paper_view(p, with_abstract=False) for p in view.papers],
        neighbours=view.neighbours,
        page_number=page,
        more=more,
        weeks=view.weeks,
        picked=_picked_ids(request),
        now_note=view.now.note(),
    )


# -- API ----------------------------------------------------------------------------------------------------


@api_router.get(
    "/api/topics", summary="Every topic with its weekly counts (last 26 weeks) and what is rising"
)
def api_topics(
    topics: Topics,
    level: Annotated[
        Literal["0", "1", "all"],
        Query(description="0: fine topics (the default), 1: coarse topics, all: both levels"),
    ] = "0",
) -> Response:
    chosen = None if level == "all" else int(level)
    return JsonResponse(_overview_json(topics.overview(weeks=SPARK_WEEKS, level=chosen)))


@api_router.get(
    "/api/topics/{topic_ref}", summary="One topic: its papers, its weekly series and its neighbours"
)
def api_topic(
    topic_ref: str,
    topics: Topics,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = PAGE_SIZE,
    offset: Annotated[int, Query(ge=0, le=100_000)] = 0,
) -> Response:
    topic_id = _id(topic_ref)
    view = topics.page(topic_id, limit=limit, offset=offset) if topic_id is not None else None
    if view is None:
        successor = topics.successor(topic_id) if topic_id is not None else None
        if successor is not None and successor != topic_id:
            return RedirectResponse(f"/api/topics/{successor}", status_code=301)
        raise ApiError(404, f"there is no topic {topic_ref[:40]!r}")
    return JsonResponse(
        {
            "topic": _topic_json(view.topic),
            "papers": [paper_object(p) for p in view.papers],
            "weeks": [_week_json(w) for w in view.weeks],
            "neighbours": [_topic_json(t) | {"similarity": round(s, 6)} for t, s in view.neighbours],
        }
    )


# -- picks: the reader's cold start for "For you" -----------------------------------------------------------


def _picked_json(p: PickedTopic) -> dict[str, Any]:
    t = p.topic
    return {"id": t.id, "label": t.label, "url": f"/topics/{t.id}", "pickedAt": p.picked_at.isoformat()}


def _pick_form(request: Request, user: User, topic_ref: str, next_url: str, *, pick: bool) -> Response:
    topic_id = _id(topic_ref)
    picks = _picks_of(request)
    if topic_id is None:
        return error_page(request, 404, "No such topic", f"There is no topic {topic_ref[:40]!r}.")
    if not pick:
        picks.unpick(user.id, topic_id)  # unpicking what is not picked changes nothing: no error
        return redirect_back(next_url, "/for-you")
    try:
        topic = picks.pick(user.id, topic_id)
    except UnknownTopic:
        return error_page(request, 404, "No such topic", f"There is no topic {topic_id} (any more).")
    return redirect_back(next_url, f"/topics/{topic.id}")


@router.post("/topics/{topic_ref}/pick", response_model=None, dependencies=CsrfChecked)
def pick_form(
    request: Request, user: Signed, topic_ref: str, next: Annotated[str, Form(max_length=2000)] = ""
) -> Response:
    return _pick_form(request, user, topic_ref, next, pick=True)


@router.post("/topics/{topic_ref}/unpick", response_model=None, dependencies=CsrfChecked)
def unpick_form(
    request: Request, user: Signed, topic_ref: str, next: Annotated[str, Form(max_length=2000)] = ""
) -> Response:
    return _pick_form(request, user, topic_ref, next, pick=False)


_PRIVATE = {"Cache-Control": "private, no-store"}


@api_router.get("/api/me/topics", summary="The topics you picked for “For you” (its cold start)")
def api_picked(request: Request, user: Signed) -> Response:
    return JsonResponse([_picked_json(p) for p in _picks_of(request).picked(user.id)], headers=_PRIVATE)


@api_router.put(
    "/api/me/topics/{topic_ref}",
    summary="Pick a topic for “For you” (a removed topic picks its successor)",
    dependencies=CsrfChecked,
)
def api_pick(request: Request, user: Signed, topic_ref: str) -> Response:
    topic_id = _id(topic_ref)
    if topic_id is None:
        raise ApiError(404, f"there is no topic {topic_ref[:40]!r}")
    picks = _picks_of(request)
    try:
        topic = picks.pick(user.id, topic_id)
    except UnknownTopic as exc:
        raise ApiError(404, str(exc)) from None
    body = {"picked": _topic_json(topic), "topics": [_picked_json(p) for p in picks.picked(user.id)]}
    return JsonResponse(body, headers=_PRIVATE)


@api_router.delete("/api/me/topics/{topic_ref}", summary="Unpick a topic", dependencies=CsrfChecked)
def api_unpick(request: Request, user: Signed, topic_ref: str) -> Response:
    topic_id = _id(topic_ref)
    picks = _picks_of(request)
    if topic_id is None or not picks.unpick(user.id, topic_id):
        raise ApiError(404, f"you have not picked topic {topic_ref[:40]!r}")
    return JsonResponse({"topics": [_picked_json(p) for p in picks.picked(user.id)]}, headers=_PRIVATE)
