"""Evidence search on the web (issue #42): the search page's Evidence view and ``GET /api/evidence``.

The view is a mode of ``/search`` (``view=evidence``: the same query box and filters, plus a choice of
roles), rendered by ``search.html``; :func:`evidence_view` builds what it shows. The JSON API is its own
route rather than a mode of ``/api/papers/search``: that one answers Hugging Face's shape (a list of
papers, which ``HfApi.list_papers`` reads), while evidence answers sentences grouped under papers.

Every sentence is the paper's own, quoted verbatim and escaped (:func:`~.markup.render_text`; the API's
``highlighted`` is escaped the same way); the only markup added is ``<mark>`` around the query's words.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from markupsafe import Markup
from pydantic import BaseModel, Field

from paperfeed.domain.evidence import (
    EVIDENCE_NOTICE,
    MAX_EVIDENCE_LIMIT,
    EvidenceGroup,
    EvidenceHit,
    EvidencePage,
    parse_roles,
)
from paperfeed.domain.feed import InvalidPeriod, PeriodOutOfRange, parse_day
from paperfeed.domain.links import paper_url
from paperfeed.domain.query import parse_query
from paperfeed.domain.search import SearchFilters
from paperfeed.domain.sentences import Role
from paperfeed.domain.wording import count
from paperfeed.services.evidence import EvidenceSearch

from .deps import app_of
from .errors import ApiError, JsonResponse
from .hf_json import highlight
from .markup import render_text
from .mutes import MuteNote, apply_mutes
from .views import PaperView, paper_view

__all__ = ["ROLE_CHOICES", "EvidenceView", "api_router", "evidence_view", "role_choice"]

api_router = APIRouter(tags=["api"])
MAX_QUERY_CHARS = 250  # as the search API
PAGE_LIMIT = 30  # sentences the page shows

# The page's role switch: (value, label). "" is every role.
ROLE_CHOICES: tuple[tuple[str, str], ...] = (
    ("", "All sentences"),
    ("result", "Results only"),
    ("method", "Methods only"),
    ("background,objective", "Background and aims"),
)
ROLE_LABELS: dict[str, str] = {
    "background": "Background",
    "objective": "Objective",
    "method": "Method",
    "result": "Result",
    "other": "Other",
}


@dataclass(frozen=True, slots=True)
class SentenceView:
    rank: int
    role: str
    role_label: str
    text_html: Markup
    before_html: Markup | None
    after_html: Markup | None
    anchor: str  # the paper page's link (the sentence's paper)


@dataclass(frozen=True, slots=True)
class GroupView:
    paper: PaperView
    sentences: tuple[SentenceView, ...]


@dataclass
class EvidenceView:
    """What the Evidence view of ``search.html`` shows under the form."""

    role: str  # the switch's value ("" for every role)
    groups: list[GroupView] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    count: int = 0  # sentences shown
    muted: MuteNote | None = None
    notice: str = EVIDENCE_NOTICE


def role_choice(text: str, problems: list[str]) -> tuple[str, frozenset[Role] | None]:
    """The page's role field: (its normalised value, the roles); a bad one is a message, every role."""
    try:
        roles = parse_roles(text)
    except ValueError as exc:
        problems.append(f"“Sentences”: {exc}; showing every role.")
        return "", None
    value = ",".join(sorted(roles)) if roles else ""
    return value, roles


def _sentence(hit: EvidenceHit, url: str) -> SentenceView:
    return SentenceView(
        rank=hit.rank,
        role=hit.role,
        role_label=ROLE_LABELS.get(hit.role, hit.role),
        text_html=render_text(hit.text, hit.spans),
        before_html=render_text(hit.before) if hit.before else None,
        after_html=render_text(hit.after) if hit.after else None,
        anchor=url,
    )


def evidence_view(
    search: EvidenceSearch,
    q: str,
    filters: SearchFilters,
    role: str,
    roles: frozenset[Role] | None,
    mute: Callable[[Sequence[EvidenceGroup]], tuple[list[EvidenceGroup], MuteNote | None]] | None = None,
) -> EvidenceView:
    """Run evidence search for the page; ``mute`` leaves out the reader's muted papers."""
    view = EvidenceView(role=role)
    page = search.search(q, filters, roles, limit=PAGE_LIMIT)
    view.notes = list(page.notes)
    groups = list(page.groups)
    if mute is not None:
        groups, view.muted = mute(groups)
    for group in groups:
        card = paper_view(group.paper, with_abstract=False)
        view.groups.append(GroupView(card, tuple(_sentence(h, card.url) for h in group.hits)))
    view.count = sum(len(g.sentences) for g in view.groups)
    return view


# -- the JSON API ------------------------------------------------------------------------------------------


class SentenceItem(BaseModel):
    rank: int = Field(description="1-based, over every sentence of the answer.")
    position: int = Field(description="The sentence's place among the paper's sentences, 0-based.")
    start: int = Field(description="Its first character in the paper's abstract.")
    end: int = Field(description="One past its last character in the abstract.")
    text: str = Field(description="The sentence, verbatim.")
    highlighted: str = Field(description="The sentence HTML-escaped, the query's words in <mark>.")
    before: str | None = Field(description="The sentence before it in the abstract (null: the first).")
    after: str | None = Field(description="The sentence after it (null: the last).")
    role: str = Field(description="background | objective | method | result | other")
    roleProbability: float = Field(description="The role classifier's probability of that role.")
    score: float = Field(description="The fused ranking score.")


class EvidencePaper(BaseModel):
    id: str
    title: str
    authors: list[str]
    published: str | None = Field(description="First version's date, YYYY-MM-DD.")
    url: str = Field(description="The paper's page on this instance.")
    sentences: list[SentenceItem]


class EvidenceAnswer(BaseModel):
    query: str
    notice: str = Field(description="What the answer is: extracted sentences, not generated, no verdict.")
    roles: list[str] | None = Field(description="The roles asked for (null: every role).")
    notes: list[str] = Field(description="Caveats, e.g. ranking by meaning unavailable.")
    papers: list[EvidencePaper] = Field(description="Papers in the order of their best sentence.")


def _day_param(value: str, name: str) -> date | None:
    if not value.strip():
        return None
    try:
        return parse_day(value.strip())
    except (InvalidPeriod, PeriodOutOfRange) as exc:
        message = f"{exc} (a date like 2025-03-18)"
        raise ApiError(400, f"{name}: {message}", errors=[{"param": name, "message": message}]) from None


def _categories_param(value: str) -> tuple[str, ...]:
    parts = [p for p in value.replace(",", " ").split() if p]
    if not parts:
        return ()
    found = parse_query("cat:" + ",".join(parts)).filters.categories
    if len(found) < len(set(parts)):
        message = "use arXiv category codes such as cs.CL or hep-th, comma-separated"
        raise ApiError(400, f"cat: {message}", errors=[{"param": "cat", "message": message}])
    return found


def answer_json(page: EvidencePage, groups: Sequence[EvidenceGroup]) -> dict[str, Any]:
    """The API's answer for ``groups`` (the page's, after mute rules)."""
    papers = []
    for group in groups:
        p = group.paper
        papers.append(
            {
                "id": p.id,
                "title": p.title,
                "authors": list(p.authors),
                "published": p.published.date().isoformat() if p.published else None,
                "url": paper_url(p.id),
                "sentences": [
                    {
                        "rank": h.rank,
                        "position": h.position,
                        "start": h.start,
                        "end": h.end,
                        "text": h.text,
                        "highlighted": highlight(h.text, h.spans),
                        "before": h.before,
                        "after": h.after,
                        "role": h.role,
                        "roleProbability": round(h.role_probability, 4),
                        "score": round(h.score, 6),
                    }
                    for h in group.hits
                ],
            }
        )
    return {
        "query": page.query,
        "notice": EVIDENCE_NOTICE,
        "roles": sorted(page.roles) if page.roles is not None else None,
        "notes": list(page.notes),
        "papers": papers,
    }


@api_router.get(
    "/api/evidence",
    response_model=EvidenceAnswer,
    responses={400: {"description": "A bad parameter; the answer names it."}},
    summary="Evidence: the papers' own sentences that bear on a question, grouped under their papers",
)
def evidence_api(
    request: Request,
    q: Annotated[
        str, Query(description=f"The question or claim, at most {count(MAX_QUERY_CHARS, 'character')}.")
    ] = "",
    limit: Annotated[int, Query(ge=1, le=MAX_EVIDENCE_LIMIT, description="Sentences to return.")] = 20,
    role: Annotated[
        str,
        Query(
            max_length=100,
            description="Only sentences of these roles, comma-separated: background, objective, method, "
            "result, other (empty: every role).",
        ),
    ] = "",
    date_from: Annotated[str, Query(alias="from", max_length=40, description="Published on or after.")] = "",
    date_to: Annotated[str, Query(alias="to", max_length=40, description="Published on or before.")] = "",
    cat: Annotated[
        str, Query(max_length=400, description="arXiv categories, comma-separated (any of).")
    ] = "",
) -> Response:
    text = q.strip()
    if not text:
        message = 'give the question or claim to find sentences for, e.g. q="dropout reduces overfitting"'
        raise ApiError(400, f"q: {message}", errors=[{"param": "q", "message": message}])
    if len(text) > MAX_QUERY_CHARS:
        message = f"{count(len(text), 'character')} long; the limit is {MAX_QUERY_CHARS}"
        raise ApiError(400, f"q is {message}", errors=[{"param": "q", "message": message}])
    try:
        roles = parse_roles(role)
    except ValueError as exc:
        raise ApiError(400, f"role: {exc}", errors=[{"param": "role", "message": str(exc)}]) from None
    start, end = _day_param(date_from, "from"), _day_param(date_to, "to")
    if start and end and start > end:
        message = f"from ({start}) is after to ({end})"
        raise ApiError(400, message, errors=[{"param": "from", "message": message}])
    filters = SearchFilters(start, end, _categories_param(cat))
    app = app_of(request)
    page = app.search.evidence.search(text, filters, roles, limit=limit)
    groups, note = apply_mutes(request, page.groups, lambda g: g.paper)
    headers = {"X-Muted-Hidden": str(note.hidden)} if note is not None and not note.shown else {}
    return JsonResponse(answer_json(page, groups), headers=headers)
