"""The paper page (``/papers/{id}``): any spelling of an id, its facts, links, BibTeX, similar papers and
the citation graph (counts in the header; Related work, References and Cited by sections).

The two graph lists page and sort through plain links (``refs_page``, ``refs_sort``, ``refs_instance``,
``cited_page``, ``cited_sort``, ``cited_instance``), so they work without JavaScript; a bad value is a 400
naming the parameter, a page past the end shows a note and a link back to the first page.

Its route is a catch-all: register this router after every other ``/papers/...`` route (see
:func:`~paperfeed.web.app.create_app`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from paperfeed.domain.citation import bibtex
from paperfeed.domain.ids import InvalidPaperId, normalize_paper_id
from paperfeed.domain.models import Paper
from paperfeed.domain.paper_graph import CitationSort
from paperfeed.domain.search import reasons_text
from paperfeed.domain.sentences import FACETS, Facet
from paperfeed.domain.wording import count
from paperfeed.services.facets import FacetedSimilar
from paperfeed.services.paper_graph import GraphListing, PaperGraphService

from . import rendering, topic_map
from .deps import AppDep
from .graph_views import GraphEntryView, RelatedEntryView, entry_view, related_view
from .markup import plain_text, render_text
from .rendering import absolute_url, error_page
from .views import (
    PageLink,
    PageMeta,
    PageNumber,
    clip,
    count_label,
    day_label,
    long_day_label,
    page_links,
    paper_url,
    paper_view,
    safe_url,
)

__all__ = ["router"]

router = APIRouter(include_in_schema=False)
SIMILAR_SIZE = 6
GRAPH_PAGE_SIZE = 20
HARVEST_HINT = "paperfeed harvest citations"

SortParam = Literal["date", "citations"]
SORT_LABELS = {"citations": "most cited", "date": "newest"}


@dataclass(frozen=True, slots=True)
class ListState:
    """Where one graph list is: its page, order and filter (from the query string)."""

    page: int
    sort: SortParam
    instance: bool


DEFAULT_REFS = ListState(1, "citations", False)
DEFAULT_CITED = ListState(1, "date", False)


@dataclass(frozen=True, slots=True)
class Choice:
    label: str
    url: str
    current: bool


@dataclass(frozen=True, slots=True)
class GraphListView:
    """A References or Cited by section."""

    anchor: str
    title: str
    total: int
    start: int  # the ordinal of the first entry shown
    entries: list[GraphEntryView]
    sorts: list[Choice]
    filters: list[Choice]
    pages: list[PageLink]
    page: int
    prev_url: str | None
    next_url: str | None
    note: str | None


@dataclass(frozen=True, slots=True)
class GraphState:
    refs: ListState
    cited: ListState

    def query(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for prefix, state, default in (
            ("refs", self.refs, DEFAULT_REFS),
            ("cited", self.cited, DEFAULT_CITED),
        ):
            if state.page != 1:
                out[f"{prefix}_page"] = str(state.page)
            if state.sort != default.sort:
                out[f"{prefix}_sort"] = state.sort
            if state.instance:
                out[f"{prefix}_instance"] = "1"
        return out

    def url(self, paper_id: str, anchor: str) -> str:
        query = urlencode(self.query())
        return paper_url(paper_id) + (f"?{query}" if query else "") + f"#{anchor}"


def _paper_links(
    paper_id: str, version: int | None, github: str | None, project: str | None
) -> list[dict[str, str]]:
    links: list[dict[str, str]] = []
    if ":" not in paper_id:
        v = f"v{version}" if version else ""
        links.append(
            {"label": "arXiv abstract", "url": f"https://arxiv.org/abs/{paper_id}{v}", "icon": "link"}
        )
        links.append({"label": "PDF", "url": f"https://arxiv.org/pdf/{paper_id}{v}", "icon": "pdf"})
    if github:
        links.append({"label": "GitHub", "url": github, "icon": "code"})
    if project and project != github:
        links.append({"label": "Project page", "url": project, "icon": "link"})
    return links


def _similar(facets: FacetedSimilar, paper: Paper, facet: Facet) -> dict[str, Any]:
    """The paper's similar papers by ``facet`` (:class:`FacetedSimilar`) for the template: the list (each
    with its reasons from the citation graph), the sentence of each that matched the facet, the switch's
    links, and why the list is empty or overall."""
    page = facets.of(paper, facet, SIMILAR_SIZE)
    views = [
        replace(paper_view(hit.paper, with_abstract=False), why=reasons_text(hit.reasons))
        for hit in page.hits
    ]
    note = page.note
    if not views:
        note = "No similar papers found yet: more appear once papers are embedded (paperfeed index)."
    switch = [Choice(name, f"?similar={name}#similar-title", name == facet) for name in FACETS]
    return {
        "similar": views,
        "similar_note": note,
        "similar_matched": page.matched,
        "similar_facet": page.facet,
        "similar_switch": switch,
        "similar_explain": facets.explain(page.facet) if views else None,
    }


def _graph_list(
    graph: PaperGraphService, paper_id: str, state: GraphState, *, references: bool
) -> GraphListView:
    mine = state.refs if references else state.cited
    anchor, title = ("references", "References") if references else ("cited-by", "Cited by")

    def moved(**change: Any) -> str:
        new = replace(mine, **change)
        return (replace(state, refs=new) if references else replace(state, cited=new)).url(paper_id, anchor)

    read = graph.references if references else graph.citations
    listing: GraphListing = read(
        paper_id,
        sort=CitationSort(mine.sort),
        in_store_only=mine.instance,
        offset=(mine.page - 1) * GRAPH_PAGE_SIZE,
        limit=GRAPH_PAGE_SIZE,
    )
    last = max(1, -(-listing.total // GRAPH_PAGE_SIZE))
    note = None
    if listing.total == 0:
        what = "references" if references else "citing papers"
        note = f"No {what} in this instance." if mine.instance else f"No {what} known."
    elif mine.page > last:
        pages = "is 1 page" if last == 1 else f"are {count(last, 'page')}"
        note = f"Page {mine.page} is past the end: there {pages}."
    return GraphListView(
        anchor=anchor,
        title=title,
        total=listing.total,
        start=listing.offset + 1,
        entries=[entry_view(e) for e in listing.entries],
        sorts=[Choice(SORT_LABELS[s], moved(sort=s, page=1), mine.sort == s) for s in ("citations", "date")],
        filters=[
            Choice("all", moved(instance=False, page=1), not mine.instance),
            Choice("in this instance", moved(instance=True, page=1), mine.instance),
        ],
        pages=page_links(min(mine.page, last), last, lambda n: moved(page=n)) if last > 1 else [],
        page=mine.page,
        prev_url=moved(page=min(mine.page, last + 1) - 1) if mine.page > 1 else None,
        next_url=moved(page=mine.page + 1) if mine.page < last else None,
        note=note,
    )


def _graph(app: AppDep, paper: Paper, state: GraphState) -> dict[str, Any]:
    """The graph's part of the page: counts, and the three sections when there is any data."""
    graph = app.catalogue.paper_graph
    summary = graph.summary(paper.id)
    if not summary.has_data:
        return {"graph": None, "harvest_hint": f"{HARVEST_HINT} {paper.id}"}
    related = graph.related(paper.id)

    def views(entries: tuple[Any, ...]) -> list[RelatedEntryView]:
        return [related_view(e, related.papers.get(e.key)) for e in entries]

    return {
        "graph": {
            "counts": summary.counts,
            "references": _graph_list(graph, paper.id, state, references=True),
            "cited": _graph_list(graph, paper.id, state, references=False),
            "related": [
                (title, views(entries))
                for title, entries in (
                    ("Prior works", related.related.prior),
                    ("Derivative works", related.related.derivative),
                    ("Shares references", related.related.coupling),
                )
                if entries
            ],
        },
        "harvest_hint": None,
    }


@router.get("/papers/{paper_id:path}", response_class=HTMLResponse, response_model=None)
def paper_page(
    request: Request,
    app: AppDep,
    paper_id: str,
    refs_page: PageNumber = 1,
    refs_sort: Annotated[SortParam, Query(description="Order of the references.")] = "citations",
    refs_instance: Annotated[bool, Query(description="Only references in this instance.")] = False,
    cited_page: PageNumber = 1,
    cited_sort: Annotated[SortParam, Query(description="Order of the citing papers.")] = "date",
    cited_instance: Annotated[bool, Query(description="Only citing papers in this instance.")] = False,
    similar: Annotated[
        Facet, Query(description="Similar papers by: overall, background, method or result.")
    ] = "overall",
) -> Response:
    """A paper by any spelling of its id; other spellings redirect, versions show the same page."""
    try:
        parsed = normalize_paper_id(paper_id)
    except InvalidPaperId:
        return error_page(
            request,
            404,
            "That is not a paper id",
            f"“{clip(paper_id, 80)}” is not an arXiv id such as 2503.10613 or hep-th/9901001.",
            query=clip(paper_id, 200),
        )
    canonical = str(parsed)  # keeps a requested version: /papers/2503.10613v2 is its own (same) page
    if paper_id != canonical:
        query = f"?{request.url.query}" if request.url.query else ""
        return RedirectResponse(paper_url(canonical) + query, status_code=301)
    detail = app.catalogue.feeds.paper(canonical)
    if detail is None:
        arxiv = None if ":" in parsed.base else f"https://arxiv.org/abs/{canonical}"
        return error_page(
            request,
            404,
            "Paper not found",
            f"No paper with id {canonical} is in this paperfeed instance.",
            query=parsed.base,
            arxiv_url=arxiv,
        )
    paper = detail.paper
    view = paper_view(paper)
    github = safe_url(paper.github_repo)
    project = safe_url(paper.project_page)
    abstract_text = plain_text(paper.abstract) if paper.abstract else ""
    description = clip(abstract_text or f"{view.title_text} by {', '.join(paper.authors[:3])}")
    meta = PageMeta(
        view.title_text, description, absolute_url(request, paper_url(paper.id)), og_type="article"
    )
    version_note = None
    if detail.requested_version is not None:
        latest = f" (the newest version known here is v{paper.version})" if paper.version else ""
        version_note = (
            f"You asked for version {detail.requested_version}: the arXiv links below point to it{latest}."
        )
    context: dict[str, Any] = {
        "paper": paper,
        "v": view,
        "links": _paper_links(paper.id, detail.requested_version, github, project),
        "listed_on": [(d.isoformat(), day_label(d)) for d in detail.listed_on],
        **_similar(app.search.facets, paper, similar),
        "bibtex": bibtex(paper),
        "version_note": version_note,
        "updated_label": day_label(paper.updated) if paper.updated else None,
        "published_label": long_day_label(paper.published.date()) if paper.published else None,
        "ai_summary_html": render_text(paper.ai_summary) if paper.ai_summary else None,
        "stars_label": count_label(paper.github_stars),
        "license_url": safe_url(paper.license),
        "doi_url": "https://doi.org/" + quote(paper.doi, safe="/") if paper.doi else None,
        "paper_topic": app.catalogue.topic_picks.paper_topic(
            paper.id
        ),  # None: topics not built or not placed
    }
    state = GraphState(
        ListState(refs_page, refs_sort, refs_instance), ListState(cited_page, cited_sort, cited_instance)
    )
    context.update(_graph(app, paper, state))
    context.update(topic_map.paper_place(request, paper.id))
    return rendering.page(request, "paper.html", meta, **context)
