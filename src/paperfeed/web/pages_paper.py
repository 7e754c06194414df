"""The paper page (``/papers/{id}``): any spelling of an id, its facts, links, BibTeX and similar papers.

Its route is a catch-all: register this router after every other ``/papers/...`` route (see
:func:`~paperfeed.web.app.create_app`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from paperfeed.domain.citation import bibtex
from paperfeed.domain.ids import InvalidPaperId, normalize_paper_id
from paperfeed.domain.models import Paper
from paperfeed.domain.results import PaperSearch

from . import rendering
from .deps import AppDep
from .markup import plain_text, render_text
from .rendering import absolute_url, error_page
from .views import (
    PageMeta,
    PaperView,
    clip,
    count_label,
    day_label,
    long_day_label,
    paper_url,
    paper_view,
    safe_url,
)

__all__ = ["router"]

router = APIRouter(include_in_schema=False)
SIMILAR_SIZE = 6


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


def _similar(
    search: PaperSearch, paper_id: str, shown: Callable[[list[Paper]], list[Paper]] = list
) -> tuple[list[PaperView], str | None]:
    """The paper's similar papers (embedding neighbours and a keyword query of its text, fused), or why
    there are none to show."""
    hits = search.similar(paper_id, limit=SIMILAR_SIZE)
    if not hits:
        return [], "No similar papers found yet: more appear once papers are embedded (paperfeed index)."
    return [paper_view(paper, with_abstract=False) for paper in shown([hit.paper for hit in hits])], None


@router.get("/papers/{paper_id:path}", response_class=HTMLResponse, response_model=None)
def paper_page(request: Request, app: AppDep, paper_id: str) -> Response:
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
        return RedirectResponse(paper_url(canonical), status_code=301)
    detail = app.feeds.paper(canonical)
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
    similar, similar_note = _similar(app.search, paper.id, app.community.with_counts)
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
        "similar": similar,
        "similar_note": similar_note,
        "bibtex": bibtex(paper),
        "version_note": version_note,
        "updated_label": day_label(paper.updated) if paper.updated else None,
        "published_label": long_day_label(paper.published.date()) if paper.published else None,
        "ai_summary_html": render_text(paper.ai_summary) if paper.ai_summary else None,
        "stars_label": count_label(paper.github_stars),
        "license_url": safe_url(paper.license),
        "doi_url": "https://doi.org/" + quote(paper.doi, safe="/") if paper.doi else None,
    }
    return rendering.page(request, "paper.html", meta, **context)
