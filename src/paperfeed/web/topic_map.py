"""The map of the papers (issue #17): the ``/map`` page, its data, and a paper's small map.

=============================  ===================================================================
``GET /map``                   the interactive map (canvas, ``static/map.js``); ``?paper=ID`` centres
                               it on a paper. Without JavaScript the page says what it is and links
                               to ``/topics``. A topic's label opens its panel; a signed-in reader's
                               page adds ``data-picks-url`` and a Pick toggle (the picks themselves
                               are fetched from ``/api/me/topics``, so the page holds none)
``GET /api/map/points``        every placed paper: place, topic, published day, primary category,
                               id; binary (default, see :func:`encode_points`) or ``format=json``
                               (the same columns as JSON arrays, about twice the size)
``GET /api/map/titles``        ``ids=a,b,…`` (at most 50) → ``{"titles": {id: title}}`` for hovering
=============================  ===================================================================

Hover titles are fetched one paper at a time rather than shipped with the points: at 200,000 papers the
titles alone are about 16 MB of JSON, while a hover's answer is under 200 bytes (docs/topics.md has the
measured sizes). Anonymous answers are kept by :mod:`.public_cache` under the data version like the
other public reads; the page fetches them without credentials so a signed-in reader shares that copy.
"""

from __future__ import annotations

import struct
from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from paperfeed.domain.topic_map import EPOCH, MapTopic
from paperfeed.domain.wording import count
from paperfeed.services.topic_map import MapData, TopicMapService

from . import rendering
from .deps import app_of
from .errors import ApiError, JsonResponse
from .map_plots import place_map
from .rendering import absolute_url
from .views import PageMeta, paper_url

__all__ = ["MAGIC", "api_router", "encode_points", "paper_place", "router"]

router = APIRouter(tags=["pages"])
api_router = APIRouter(tags=["map"])
MAGIC = b"PFMAP1\0\0"
MAX_TITLES = 50
MAX_ID = 64
QUANT = 65_535  # places are sent as 16-bit fractions of the map's bounds


def _service(request: Request) -> TopicMapService:
    return app_of(request).catalogue.topic_map


def _topic_json(t: MapTopic) -> dict[str, Any]:
    return {
        "id": t.id,
        "label": t.label,
        "x": round(t.x, 5),
        "y": round(t.y, 5),
        "size": t.size,
        "level": t.level,
        "parent": t.parent_id,
        "url": f"/topics/{t.id}",
    }


def _header(data: MapData, categories: list[str], bounds: list[float]) -> dict[str, Any]:
    return {
        "generation": data.generation,
        "count": len(data.points),
        "bounds": bounds,
        "quant": QUANT,
        "dayEpoch": EPOCH.isoformat(),
        "categories": categories,
        "topics": [_topic_json(t) for t in data.topics],
    }


def _columns(data: MapData) -> tuple[list[str], list[float], list[int], list[int]]:
    """The category list (most common first), bounds, and each point's topic and category index."""
    from collections import Counter

    p = data.points
    counts = Counter(p.category)
    categories = [c for c, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    cat_index = {c: i for i, c in enumerate(categories)}
    topic_index = {t.id: i for i, t in enumerate(data.topics)}
    missing = len(data.topics)  # a point whose topic row is gone (never, but not a crash): one past the end
    bounds = [min(p.x), min(p.y), max(p.x), max(p.y)] if len(p) else [0.0, 0.0, 0.0, 0.0]
    return (
        categories,
        [round(b, 6) for b in bounds],
        [topic_index.get(t, missing) for t in p.topic],
        [cat_index[c] for c in p.category],
    )


def encode_points(data: MapData) -> bytes:
    """The compact answer: 10 bytes a point plus its id, front-coded (about 3 bytes for arXiv ids).

    Layout (little-endian): ``MAGIC`` (8 bytes), the header's length (u32), the JSON header padded with
    spaces to a multiple of 4 (``generation``, ``count`` n, ``bounds`` [x0, y0, x1, y1], ``quant``,
    ``dayEpoch``, ``categories``, ``topics``), then five u16 columns of n values each — x and y as
    fractions of the bounds times ``quant``, the index of the point's topic in ``topics``, its published
    day (days since ``dayEpoch``, 0 unknown) and the index of its primary category in ``categories`` —
    then the ids in order, each as (u8 characters shared with the previous id, u8 length of the rest,
    the rest in UTF-8).
    """
    import numpy as np

    p = data.points
    categories, bounds, topics, cats = _columns(data)
    header = orjson.dumps(_header(data, categories, bounds))
    header += b" " * (-(len(MAGIC) + 4 + len(header)) % 4)
    x0, y0, x1, y1 = bounds
    sx, sy = max(x1 - x0, 1e-12), max(y1 - y0, 1e-12)
    qx = np.clip(np.rint((np.asarray(p.x, dtype=np.float64) - x0) / sx * QUANT), 0, QUANT)
    qy = np.clip(np.rint((np.asarray(p.y, dtype=np.float64) - y0) / sy * QUANT), 0, QUANT)
    columns = [qx, qy, np.asarray(topics), np.asarray(p.day), np.asarray(cats)]
    body = b"".join(np.asarray(c, dtype="<u2").tobytes() for c in columns)
    ids = bytearray()
    previous = b""
    for pid in p.ids:
        raw = pid.encode()[:255]
        shared = 0
        limit = min(len(raw), len(previous), 255)
        while shared < limit and raw[shared] == previous[shared]:
            shared += 1
        ids += bytes((shared, len(raw) - shared))
        ids += raw[shared:]
        previous = raw
    return MAGIC + struct.pack("<I", len(header)) + header + body + bytes(ids)


def points_json(data: MapData) -> dict[str, Any]:
    """The same columns as JSON arrays (for clients without a binary reader)."""
    p = data.points
    categories, bounds, topics, cats = _columns(data)
    out = _header(data, categories, bounds)
    out["points"] = {
        "id": p.ids,
        "x": [round(v, 4) for v in p.x],
        "y": [round(v, 4) for v in p.y],
        "topic": topics,
        "day": p.day,
        "category": cats,
    }
    return out


# -- API ----------------------------------------------------------------------------------------------------


@api_router.get(
    "/api/map/points",
    summary="Every placed paper's map place, topic, published day and primary category, and the topics",
    responses={200: {"content": {"application/octet-stream": {}, "application/json": {}}}},
)
def api_points(
    request: Request,
    format: Annotated[
        Literal["binary", "json"], Query(description="binary (compact, the map's) or json (columnar)")
    ] = "binary",
) -> Response:
    data = _service(request).data()
    if format == "json":
        return JsonResponse(points_json(data))
    return Response(encode_points(data), media_type="application/octet-stream")


@api_router.get("/api/map/titles", summary="Titles of papers on the map, for hovering")
def api_titles(
    request: Request,
    ids: Annotated[str, Query(max_length=MAX_TITLES * (MAX_ID + 1), description="Comma-separated ids")],
) -> Response:
    wanted = [i.strip() for i in ids.split(",") if i.strip()]
    if not wanted:
        raise ApiError(400, "ids: give at least one paper id", errors=[{"param": "ids", "message": "empty"}])
    if len(wanted) > MAX_TITLES:
        raise ApiError(400, f"ids: at most {count(MAX_TITLES, 'id')} (got {len(wanted)})")
    bad = next((i for i in wanted if len(i) > MAX_ID or not i.isprintable()), None)
    if bad is not None:
        raise ApiError(400, f"ids: {bad[:40]!r} is not a paper id")
    return JsonResponse({"titles": _service(request).titles(wanted)})


# -- pages --------------------------------------------------------------------------------------------------


@router.get("/map", response_class=HTMLResponse, include_in_schema=False)
def map_page(
    request: Request,
    paper: Annotated[str, Query(max_length=MAX_ID, description="A paper to centre the map on")] = "",
) -> HTMLResponse:
    generation = _service(request).generation()
    meta = PageMeta(
        "Map of the papers",
        "An interactive map of the papers of this instance: near papers are about near things.",
        absolute_url(request, "/map"),
    )
    return rendering.page(
        request,
        "map.html",
        meta,
        nav="map",
        headers=None if generation is not None else rendering.WAITING_HEADERS,
        built=generation is not None,
        outlook=None
        if generation is not None
        else app_of(request).maintenance.topic_outlook.outlook().sentences(),
        paper=paper.strip(),
        paper_href=paper_url(paper.strip()) if paper.strip() else None,
    )


def paper_place(request: Request, paper_id: str) -> dict[str, Any]:
    """The paper page's small map (``place_map``, or ``None`` when the paper has no place yet)."""
    place = _service(request).place(paper_id)
    if place is None:
        return {"place_map": None, "place_topic": None, "place_href": None}
    topic = place.topic
    about = f"; its topic, {topic.label}, tinted" if topic is not None else ""
    label = f"Where this paper sits on the map of the papers{about}"
    return {
        "place_map": place_map(place, label=label),
        "place_topic": topic,
        "place_href": "/map?paper=" + paper_url(paper_id).removeprefix("/papers/"),
    }
