"""The citation graph in the JSON API (issue #16).

====================================  =================================================================
``GET /api/papers/{id}/references``   ``offset``, ``limit`` ≤ 100, ``sort`` (citations | date),
                                      ``in_instance`` → what the paper cites
``GET /api/papers/{id}/citations``    the same parameters (``sort`` defaults to date) → who cites it
``GET /api/papers/{id}/related``      ``limit`` ≤ 50 per list → prior, derivative and coupling lists,
                                      each entry with its ``reason`` and the numbers behind it
====================================  =================================================================

A list answers ``{"items", "total", "offset", "limit", "sort", "inInstance", "counts"}``. An item of a
paper in this instance is the daily item of ``/api/daily_papers`` (``paper`` object and all) plus the
graph fields; a work outside it has only the graph fields: ``key`` (``2401.12345``, ``doi:…``, ``s2:…``,
``openalex:W…``), ``title``, ``year``, ``publishedAt``, ``externalIds``, ``url`` (arXiv, DOI, Semantic
Scholar or OpenAlex), ``inInstance``, ``citationCount``, ``isInfluential`` (null when the source does
not say), ``contexts``, ``intents`` and ``sources``. Unknown papers are 404, bad parameters 400 naming
the parameter. These routes come before ``api.py``'s ``/api/papers/{id}`` catch-all.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict

from paperfeed.domain.models import Paper
from paperfeed.domain.paper_graph import CitationSort, LinkCounts
from paperfeed.domain.related_work import RelatedEntry, UnknownPaper
from paperfeed.services.paper_graph import MAX_LIMIT, MAX_OFFSET, GraphListing, PaperGraphService

from .deps import app_of
from .errors import ApiError, JsonResponse
from .graph_views import graph_item, related_item

__all__ = ["router"]

router = APIRouter(tags=["citations"])
MAX_RELATED = 50


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Counts(_Open):
    references: int
    citations: int
    citationsLast12Months: int
    harvestedAt: str | None = None


class GraphItem(_Open):
    """A work: the HF daily-item fields when it is in this instance, plus these."""

    key: str
    title: str | None
    year: int | None
    externalIds: dict[str, str]
    url: str | None
    inInstance: bool
    citationCount: int
    isInfluential: bool | None
    contexts: list[str]
    intents: list[str]
    sources: list[str]


class GraphList(_Open):
    items: list[GraphItem]
    total: int
    offset: int
    limit: int
    sort: str
    inInstance: bool
    counts: Counts


class RelatedItem(_Open):
    key: str
    title: str | None
    inInstance: bool
    reason: str
    score: int
    sharedReferences: int
    coCitedWithReferences: int
    coCitations: int
    citesPaper: bool


class Related(_Open):
    prior: list[RelatedItem]
    derivative: list[RelatedItem]
    coupling: list[RelatedItem]


class ErrorModel(_Open):
    error: str
    status: int
    title: str


_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorModel, "description": "Invalid parameter (the message names it)"},
    404: {"model": ErrorModel, "description": "Unknown paper"},
}

Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Entries to skip.")]
Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description=f"Entries per page, at most {MAX_LIMIT}.")]
InInstance = Annotated[bool, Query(description="Only works that are papers of this instance.")]
Sort = Literal["citations", "date"]


def _graph(request: Request) -> PaperGraphService:
    return app_of(request).catalogue.paper_graph


def _counts(counts: LinkCounts) -> dict[str, Any]:
    return {
        "references": counts.references,
        "citations": counts.citations,
        "citationsLast12Months": counts.citations_last_12_months,
        "harvestedAt": counts.harvested_at.isoformat() if counts.harvested_at else None,
    }


def _shown(papers: list[Paper]) -> dict[str, Paper]:
    """The papers by id (read through the visible-papers lookup: with the counts readers see elsewhere)."""
    return {p.id: p for p in papers}


def _list(request: Request, paper_id: str, references: bool, **page: Any) -> Response:
    graph = _graph(request)
    try:
        summary = graph.summary(paper_id)
        read = graph.references if references else graph.citations
        listing: GraphListing = read(summary.paper.id, **page)
    except UnknownPaper as exc:
        raise ApiError(404, str(exc)) from None
    shown = _shown([e.paper for e in listing.entries if e.paper is not None])
    items = [graph_item(e.row, shown.get(e.paper.id) if e.paper else None) for e in listing.entries]
    return JsonResponse(
        {
            "items": items,
            "total": listing.total,
            "offset": listing.offset,
            "limit": listing.limit,
            "sort": listing.sort.value,
            "inInstance": listing.in_store_only,
            "counts": _counts(summary.counts),
        }
    )


@router.get(
    "/api/papers/{paper_id:path}/references",
    response_model=GraphList,
    responses=_ERRORS,
    summary="What a paper cites (its reference list), paged",
)
def references(
    request: Request,
    paper_id: str,
    offset: Offset = 0,
    limit: Limit = 20,
    sort: Annotated[Sort, Query(description="Most cited first, or newest first.")] = "citations",
    in_instance: InInstance = False,
) -> Response:
    return _list(
        request,
        paper_id,
        True,
        sort=CitationSort(sort),
        in_store_only=in_instance,
        offset=offset,
        limit=limit,
    )


@router.get(
    "/api/papers/{paper_id:path}/citations",
    response_model=GraphList,
    responses=_ERRORS,
    summary="The papers that cite a paper, paged",
)
def citations(
    request: Request,
    paper_id: str,
    offset: Offset = 0,
    limit: Limit = 20,
    sort: Annotated[Sort, Query(description="Newest first, or most cited first.")] = "date",
    in_instance: InInstance = False,
) -> Response:
    return _list(
        request,
        paper_id,
        False,
        sort=CitationSort(sort),
        in_store_only=in_instance,
        offset=offset,
        limit=limit,
    )


@router.get(
    "/api/papers/{paper_id:path}/related",
    response_model=Related,
    responses=_ERRORS,
    summary="Related work from the citation graph: prior works, derivative works, shared references",
)
def related(
    request: Request,
    paper_id: str,
    limit: Annotated[int, Query(ge=1, le=MAX_RELATED, description="Entries per list.")] = 10,
) -> Response:
    try:
        found = _graph(request).related(paper_id, per_list=limit)
    except UnknownPaper as exc:
        raise ApiError(404, str(exc)) from None
    shown = _shown(list(found.papers.values()))

    def items(entries: tuple[RelatedEntry, ...]) -> list[dict[str, Any]]:
        return [related_item(e, shown.get(e.key)) for e in entries]

    rel = found.related
    return JsonResponse(
        {"prior": items(rel.prior), "derivative": items(rel.derivative), "coupling": items(rel.coupling)}
    )
