"""Rising this week (issue #17): the daily page's box and ``GET /api/topics/rising``.

=============================  ===================================================================
``GET /api/topics/rising``     ``{"week", "heading", "built", "previousWeeks", "minLift", "weeks",
                               "topics": [{id, label, url, papers, share, before, lift, summary,
                               shares}]}`` for the week of ``date`` (``YYYY-MM-DD``, default today);
                               ``limit`` 1–10 (3); ``now``: the site's "now" it counts
                               "this week" from (docs/trending.md, "Which now")
=============================  ===================================================================

The box on the day and week pages is :func:`rising_box`: hidden (None) when no topics were built or
nothing qualifies. How a topic qualifies: docs/topics.md ("Rising this week").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from markupsafe import Markup

from paperfeed.domain.feed import InvalidPeriod, parse_day
from paperfeed.domain.topic_rising import (
    PREVIOUS_WEEKS,
    RisingEntry,
    lift_words,
    rising_heading,
    shares_alt,
)
from paperfeed.domain.wording import count
from paperfeed.services.topic_rising import RisingService

from .deps import app_of
from .errors import ApiError, JsonResponse
from .plots import share_bars

__all__ = ["RisingBox", "RisingItem", "api_router", "rising_box"]

api_router = APIRouter(tags=["topics"])


def rising_of(request: Request) -> RisingService:
    return app_of(request).catalogue.topic_rising


Rising = Annotated[RisingService, Depends(rising_of)]


@dataclass(frozen=True, slots=True)
class RisingItem:
    entry: RisingEntry
    url: str
    summary: str  # "5 papers this week, 3.1× its usual share"
    detail: str  # the raw shares, for a tooltip
    plot: Markup


@dataclass(frozen=True, slots=True)
class RisingBox:
    heading: str
    week: date
    items: list[RisingItem]
    now_note: str | None = None  # "this week" is the archive's last week, not today's: the box says so


def _detail(e: RisingEntry) -> str:
    return (
        f"{e.share * 100:.1f}% of this week's papers, {e.before * 100:.1f}% of the "
        f"{count(PREVIOUS_WEEKS, 'week')} before"
    )


def rising_box(request: Request, day: date) -> RisingBox | None:
    """The box for a page about ``day`` (its ISO week); None when there is nothing to show."""
    service = rising_of(request)
    found = service.week(day)
    if found is None or not found.entries:
        return None
    items = [
        RisingItem(
            e,
            f"/topics/{e.topic_id}",
            lift_words(e),
            _detail(e),
            share_bars(e.shares, label=shares_alt(e)),
        )
        for e in found.entries
    ]
    now = service.now()
    heading = rising_heading(found.week, now.today)
    relative = not heading.startswith("Rising in the week of")  # "this week" or "last week": of which now
    return RisingBox(heading, found.week, items, now.note() if relative else None)


@api_router.get(
    "/api/topics/rising",
    summary="The topics rising in a week: share of papers against their previous 8 weeks",
)
def api_rising(
    rising: Rising,
    date: Annotated[str, Query(max_length=40, description="a day of the week, YYYY-MM-DD")] = "",
    limit: Annotated[int, Query(ge=1, le=10)] = 3,
) -> Response:
    now = rising.now()
    try:
        day = parse_day(date) if date.strip() else now.today
    except InvalidPeriod as exc:
        raise ApiError(400, f"date: {exc}") from None
    found = rising.week(day, limit=limit)
    week = found.week if found is not None else day - timedelta(days=day.weekday())
    entries = found.entries if found is not None else ()
    body: dict[str, Any] = {
        "week": week.isoformat(),
        "heading": rising_heading(week, now.today),
        "now": {"at": now.at.isoformat(), "archive": now.archive, "note": now.note()},
        "built": found is not None,
        "previousWeeks": PREVIOUS_WEEKS,
        "minLift": rising.min_lift,
        "weeks": [(week - timedelta(weeks=i)).isoformat() for i in range(PREVIOUS_WEEKS, -1, -1)],
        "topics": [e.to_json() | {"url": f"/topics/{e.topic_id}", "summary": lift_words(e)} for e in entries],
    }
    return JsonResponse(body)
