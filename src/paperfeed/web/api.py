"""JSON API under /api, shaped like Hugging Face's papers API (so ``huggingface_hub.HfApi`` works on it).

=================================  =====================================================================
``GET /api/daily_papers``          ``date`` | ``week`` | ``month``, ``sort`` (publishedAt, trending,
                                   cited), ``p``, ``limit`` ≤ 100 → daily items (HfApi.list_daily_papers)
``GET /api/papers/search``         ``q`` (≤ 250 chars), ``limit`` ≤ 120 → daily items with
                                   ``highlightedTitle``/``highlightedSummary`` (HfApi.list_papers);
                                   ``topic`` only that topic's papers (no ``q``: its papers ranked
                                   like its page); unknown 400, removed 301 to its successor
``GET /api/papers``                ``cursor``, ``limit`` ≤ 100 → all papers newest first; the next page's
                                   URL is in the ``Link: <…>; rel="next"`` header, as HF paginates
``GET /api/papers/{id}``           one paper object (HfApi.paper_info); any id spelling, 404 if unknown
``GET /api/papers/{id}/similar``   ``limit`` ≤ 50 → daily items with ``similarity`` (cosine of the
                                   embeddings; null if either paper is not embedded yet) and
                                   ``reasons`` (from the citation graph: ``kind``, ``count``, ``text``
                                   such as "shares 8 references"; empty if none), best first;
                                   ``facet`` overall | background | method | result: by that part of the
                                   abstracts, each item with ``facet`` and ``matchedSentence``
``GET /papers/{id}.md``            the paper page as Markdown (HfApi.read_paper), with its citation graph
``GET /api/papers/{id}/…``         ``references``, ``citations``, ``related``: the citation graph, in
                                   ``graph_api.py``
=================================  =====================================================================

Semantics of ``/api/daily_papers``: with ``date``/``week``/``month`` the papers listed in that period,
most upvoted first (``sort=trending``: by the trending score as of the period's end); with none of them,
``sort=publishedAt`` gives the newest days first and ``sort=trending`` the site-wide trending list.
``sort=cited`` (no period) ranks by citation velocity (docs/citations.md), each item with
``citationCount``, ``citationsLast12Months`` and ``citationVelocity`` (citations per month).
``submitter`` is accepted for compatibility; it names Hugging Face users, so it matches nothing here.
Counts (``upvotes``, ``numComments``) are Hugging Face's imported ones plus this instance's readers'
(see docs/community.md); ``submittedOnDailyBy`` names the reader who submitted a paper here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import PlainTextResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict

from paperfeed.domain.citation_trend import CitedItem
from paperfeed.domain.feed import FeedItem, Period, parse_day, parse_month, parse_week
from paperfeed.domain.ids import normalize_paper_id
from paperfeed.domain.models import Paper
from paperfeed.domain.results import SearchHit
from paperfeed.domain.search import SearchFilters
from paperfeed.domain.sentences import parse_facet
from paperfeed.domain.wording import count
from paperfeed.mcp.paper_markdown import GraphMarkdown, paper_markdown

from .deps import app_of, feeds_of, search_of
from .errors import ApiError, JsonResponse
from .hf_json import daily_item, highlight, paper_object
from .mutes import apply_mutes
from .rendering import search_notes_headers

__all__ = ["MAX_QUERY_CHARS", "base_url", "checked_query", "router"]

MAX_QUERY_CHARS = 250  # as Hugging Face
MAX_DAILY_LIMIT = 100
MAX_SEARCH_LIMIT = 120
MAX_PAGE = 10_000
MARKDOWN_REFERENCES = 100  # the Markdown lists this many references (most cited first), then points on

router = APIRouter(tags=["api"])
T = TypeVar("T")


# -- documentation models (responses are built as dicts; these describe them for /docs) -----------------


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Author(_Open):
    name: str
    hidden: bool = False


class Organization(_Open):
    name: str
    fullname: str


class OneLineSummary(_Open):
    """paperfeed's one-line summary of a paper (docs/web-api.md): Hugging Face's ``ai_summary`` where it
    gave one (``source`` ``hugging_face``), else the sentence of the abstract that best states what the
    paper does or finds, extracted verbatim, not generated (``source`` ``extracted``)."""

    text: str
    source: Literal["hugging_face", "extracted"]


class PaperModel(_Open):
    """HF's paper object."""

    id: str
    authors: list[Author]
    publishedAt: str | None = None
    submittedOnDailyAt: str | None = None
    title: str
    summary: str
    upvotes: int
    projectPage: str | None = None
    githubRepo: str | None = None
    githubStars: int | None = None
    ai_summary: str | None = None
    ai_keywords: list[str] | None = None
    oneLineSummary: OneLineSummary | None = None  # paperfeed's: HF's ai_summary, else one extracted
    organization: Organization | None = None
    topic: dict[str, Any] | None = None  # paperfeed's: {"id", "label", "url"} of its topic (docs/topics.md)


class DailyItem(_Open):
    """One daily-papers entry: the paper plus when it reached the daily page."""

    paper: PaperModel
    publishedAt: str | None = None
    title: str
    summary: str
    numComments: int
    organization: Organization | None = None
    topic: dict[str, Any] | None = None  # paperfeed's: {"id", "label", "url"} of its topic (docs/topics.md)


class SearchItem(DailyItem):
    highlightedTitle: str
    highlightedSummary: str


class SimilarReason(_Open):
    kind: str  # co_cited | shared_references | cites | cited_by | cited_by_references | cites_citers
    count: int
    text: str  # e.g. "cited together with it by 12 papers"


class SimilarItem(DailyItem):
    similarity: float | None  # cosine of the two papers' embeddings; the order is the fused ranking
    reasons: list[SimilarReason]  # why it is listed, from the citation graph (empty: by its text alone)
    facet: str | None = None  # with ?facet=: what the list was ranked by ("overall" when it fell back)
    matchedSentence: str | None = None  # with ?facet=: the item's sentence that best matches the facet


class ErrorModel(_Open):
    error: str
    status: int
    title: str


_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorModel, "description": "Invalid parameter (the message says which and why)"},
    404: {"model": ErrorModel, "description": "Unknown paper"},
}


# -- helpers ------------------------------------------------------------------------------------------


def _items(items: tuple[FeedItem, ...] | list[FeedItem]) -> list[dict[str, Any]]:
    return [daily_item(i.paper, upvotes=i.upvotes, listed_on=i.day) for i in items]


def _cited_item(item: CitedItem) -> dict[str, Any]:
    """A daily item plus the inputs of its citation velocity."""
    out = daily_item(item.paper)
    out["citationCount"] = item.citations
    out["citationsLast12Months"] = item.citations_last_12_months
    out["citationVelocity"] = round(item.velocity, 4)
    return out


def checked_query(q: str) -> str:
    text = q.strip()
    if len(text) > MAX_QUERY_CHARS:
        raise ApiError(400, f"q is {count(len(text), 'character')} long; the limit is {MAX_QUERY_CHARS}")
    return text


def _canonical_id(paper_id: str) -> str:
    return normalize_paper_id(paper_id).base  # InvalidPaperId → 400 via errors.install


def base_url(request: Request) -> str:
    """The site's public URL: ``settings.base_url`` if set, else the one the request came to."""
    configured = app_of(request).settings.base_url
    return (configured or str(request.base_url)).rstrip("/")


# -- endpoints ----------------------------------------------------------------------------------------


@router.get(
    "/api/daily_papers",
    response_model=list[DailyItem],
    responses=_ERRORS,
    summary="Daily papers of a day, week or month (Hugging Face compatible)",
)
def daily_papers(
    request: Request,
    date: Annotated[str | None, Query(description="Day, YYYY-MM-DD.", max_length=40)] = None,
    week: Annotated[
        str | None, Query(description="ISO week, YYYY-Www (e.g. 2025-W12).", max_length=40)
    ] = None,
    month: Annotated[str | None, Query(description="Month, YYYY-MM.", max_length=40)] = None,
    submitter: Annotated[
        str | None, Query(description="HF username; paperfeed has no submitters.", max_length=200)
    ] = None,
    sort: Annotated[
        Literal["publishedAt", "trending", "cited"],
        Query(description="Order (cited: citation velocity, site-wide only; docs/citations.md)."),
    ] = "publishedAt",
    p: Annotated[int, Query(ge=0, le=MAX_PAGE, description="Page number, 0-based.")] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_DAILY_LIMIT, description="Papers per page.")] = 50,
) -> Response:
    given = [name for name, value in (("date", date), ("week", week), ("month", month)) if value]
    if len(given) > 1:
        raise ApiError(400, f"give only one of date, week and month (got {', '.join(given)})")
    if submitter:
        return JsonResponse([])
    offset = p * limit
    if sort == "cited":
        if given:
            raise ApiError(400, f"sort=cited ranks the whole store; give no {given[0]}")
        cited = app_of(request).catalogue.cited_trending.page(limit, offset)
        kept_cited, muted = _unmuted(request, cited.items, lambda t: t.paper)
        return JsonResponse([_cited_item(t) for t in kept_cited], headers=muted)
    feeds = feeds_of(request)
    order: Literal["upvotes", "trending"] = "trending" if sort == "trending" else "upvotes"
    items: tuple[FeedItem, ...] | list[FeedItem]
    if date:
        day = parse_day(date)
        if order == "trending":
            items = feeds.period(Period.of("day", day), limit, offset, "trending").items
        else:
            items = feeds.day(day, limit=limit, offset=offset).items
    elif week:
        items = feeds.week(parse_week(week), limit=limit, offset=offset, sort=order).items
    elif month:
        items = feeds.month(parse_month(month), limit=limit, offset=offset, sort=order).items
    elif order == "trending":
        page = feeds.trending(limit, offset)
        items = [FeedItem(t.rank, t.paper, t.upvotes, t.first_seen.date()) for t in page.items]
    else:
        items = feeds.recent(limit=limit, offset=offset)
    kept, headers = _unmuted(request, items, lambda i: i.paper)
    return JsonResponse(_items(kept), headers=headers)


def _unmuted(
    request: Request, items: Sequence[T], paper_of: Callable[[T], Paper]
) -> tuple[list[T], dict[str, str]]:
    """``items`` without the asking reader's muted papers (``?muted=show`` keeps them), and the header
    that says how many were left out (docs/groups.md, "Mute rules")."""
    kept, note = apply_mutes(request, items, paper_of)
    if note is None or note.shown:
        return kept, {}
    return kept, {"X-Muted-Hidden": str(note.hidden)}


@router.get(
    "/api/papers/search",
    response_model=list[SearchItem],
    responses=_ERRORS,
    summary="Search papers (hybrid keyword + semantic; Hugging Face compatible)",
)
def search_papers(
    request: Request,
    q: Annotated[str, Query(description=f"Query, at most {count(MAX_QUERY_CHARS, 'character')}.")] = "",
    limit: Annotated[int, Query(ge=1, le=MAX_SEARCH_LIMIT, description="Results to return.")] = 50,
    topic: Annotated[
        int | None,
        Query(
            ge=0,
            le=999_999_999,
            description="Only papers of this topic (GET /api/topics); a removed topic redirects (301) "
            "to the same search in its successor, an unknown one is a 400.",
        ),
    ] = None,
) -> Response:
    text = checked_query(q)
    filters = None
    if topic is not None:
        found = app_of(request).catalogue.topic_picks.resolve(topic)
        if found is None:
            message = f"there is no topic {topic} (GET /api/topics lists them)"
            raise ApiError(400, f"topic: {message}", errors=[{"param": "topic", "message": message}])
        if found.id != topic:  # a rebuild removed it: the same search in its successor, as /api/topics does
            query = urlencode({"q": q, "limit": limit, "topic": found.id})
            return RedirectResponse(f"/api/papers/search?{query}", status_code=301)
        filters = SearchFilters(topic=found.id)
        if not text:  # no words: the topic's papers, ranked like its page
            catalogue = app_of(request).catalogue
            ids = catalogue.topics.paper_ids(found.id, limit=limit)
            found_papers = catalogue.visible.get(ids)
            return JsonResponse([daily_item(found_papers[i]) for i in ids if i in found_papers])
    if not text:
        return JsonResponse(_items(feeds_of(request).recent(limit=limit)))
    page = search_of(request).search(text, filters, limit=limit)
    coverage = app_of(request).indexes.coverage.note()
    notes = [*page.notes, *filter(None, [coverage])]
    kept = search_notes_headers(bool(page.notes), coverage)
    headers = {"X-Search-Notes": "; ".join(notes)[:500], **kept} if kept is not None else None
    hits, muted = _unmuted(request, page.hits, lambda h: h.paper)
    return JsonResponse([_search_item(h) for h in hits], headers={**(headers or {}), **muted})


def _search_item(hit: SearchHit) -> dict[str, Any]:
    """A search hit (its paper read through the visible-papers lookup: with the shown counts)."""
    item = daily_item(hit.paper)
    item["highlightedTitle"] = highlight(hit.paper.title, hit.title_spans)
    item["highlightedSummary"] = highlight(hit.paper.abstract, hit.abstract_spans)
    return item


@router.get(
    "/api/papers",
    response_model=list[PaperModel],
    responses={400: _ERRORS[400]},
    summary="All papers, newest first, paged by cursor (next page in the Link header)",
)
def list_papers(
    request: Request,
    cursor: Annotated[
        str | None, Query(description="next-page cursor from the Link header", max_length=400)
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_DAILY_LIMIT)] = 50,
) -> Response:
    page = feeds_of(request).papers_page(cursor or None, limit)
    headers = {}
    if page.next_cursor:
        query = urlencode({"cursor": page.next_cursor, "limit": limit})
        headers["Link"] = f'<{base_url(request)}/api/papers?{query}>; rel="next"'
    return JsonResponse([paper_object(paper) for paper in page.items], headers=headers)


@router.get(
    "/api/papers/{paper_id:path}/similar",
    response_model=list[SimilarItem],
    responses=_ERRORS,
    summary="Papers most similar to one paper (embedding neighbours fused with its citation graph, "
    "each with its reasons; or by one facet of the abstracts)",
)
def similar_papers(
    request: Request,
    paper_id: str,
    limit: Annotated[int, Query(ge=1, le=50)] = 10,
    facet: Annotated[
        str | None,
        Query(
            max_length=20,
            description="overall (default), background, method or result: similar by that part of the "
            "abstracts (docs/search.md); the list falls back to overall, saying so in the Paperfeed-Note "
            "header, when the paper has no sentence of that role.",
        ),
    ] = None,
) -> Response:
    try:
        chosen = parse_facet(facet)
    except ValueError as exc:
        raise ApiError(400, f"facet: {exc}") from None
    detail = feeds_of(request).paper(paper_id)
    if detail is None:
        raise ApiError(404, f"paper {_canonical_id(paper_id)} is not in this paperfeed instance")
    headers: dict[str, str] = {}
    page = app_of(request).search.facets.of(detail.paper, chosen, limit)
    hits, matched = page.hits, page.matched
    shown = None if facet is None else page.facet
    if page.note:
        headers["Paperfeed-Note"] = page.note
    hits, muted = _unmuted(request, hits, lambda h: h.paper)
    headers.update(muted)
    out = []
    for hit in hits:
        item = daily_item(hit.paper)
        item["similarity"] = None if hit.similarity is None else round(hit.similarity, 6)
        item["reasons"] = [{"kind": r.kind, "count": r.count, "text": r.text} for r in hit.reasons]
        if shown is not None:
            item["facet"] = shown
            item["matchedSentence"] = matched.get(hit.paper.id)
        out.append(item)
    return JsonResponse(out, headers=headers)


@router.get(
    "/api/papers/{paper_id:path}",
    response_model=PaperModel,
    responses=_ERRORS,
    summary="One paper (Hugging Face compatible); accepts versioned and old-style arXiv ids",
)
def paper_info(request: Request, paper_id: str) -> Response:
    detail = feeds_of(request).paper(paper_id)
    if detail is None:
        raise ApiError(404, f"paper {_canonical_id(paper_id)} is not in this paperfeed instance")
    first = detail.listed_on[0] if detail.listed_on else None
    out = paper_object(detail.paper, listed_on=first)
    submission = app_of(request).readers.community.submission(detail.paper.id)
    if submission is not None and submission.name:
        out["submittedOnDailyBy"] = {"name": submission.name, "fullname": submission.name}
    placed = app_of(request).catalogue.topic_picks.paper_topic(detail.paper.id)
    out["topic"] = None
    if placed is not None:
        t, parent = placed.topic, placed.parent
        out["topic"] = {"id": t.id, "label": t.label, "url": f"/topics/{t.id}"} | {
            "parent": None
            if parent is None
            else {"id": parent.id, "label": parent.label} | {"url": f"/topics/{parent.id}"}
        }
    return JsonResponse(out)


@router.get(
    "/papers/{paper_id:path}.md",
    response_class=PlainTextResponse,
    responses=_ERRORS,
    summary="A paper page as Markdown (what HfApi.read_paper reads)",
    tags=["pages"],
)
def paper_md(request: Request, paper_id: str) -> Response:
    detail = feeds_of(request).paper(paper_id)
    if detail is None:
        raise ApiError(404, f"paper {_canonical_id(paper_id)} is not in this paperfeed instance")
    base = base_url(request)
    graph = app_of(request).catalogue.paper_graph
    summary = graph.summary(detail.paper.id)
    extra = None
    if summary.has_data:
        extra = GraphMarkdown(
            summary.counts,
            graph.references(detail.paper.id, limit=MARKDOWN_REFERENCES),
            graph.related(detail.paper.id),
            base,
        )
    page = f"{base}/papers/{detail.paper.id}"
    topic = app_of(request).catalogue.topic_picks.paper_topic(detail.paper.id)
    return Response(
        paper_markdown(detail, page, extra, topic, base), media_type="text/markdown; charset=utf-8"
    )
