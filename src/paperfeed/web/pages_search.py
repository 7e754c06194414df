"""The search page (``/search``): the query language, filters as form fields, one page of hits.

Bad filter values become messages on the page, never errors; :func:`form_day` and
:func:`form_categories` are shared with the library's saved searches. The one exception is ``topic``,
which only links and the topic select produce: a topic id that is not a number or names no topic is a
400 page naming the parameter, and a topic a rebuild removed redirects (301) to its successor's search,
as ``/topics/{id}`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from paperfeed.domain.arxiv_subjects import SUBJECT_CODES
from paperfeed.domain.evidence import looks_like_question
from paperfeed.domain.feed import InvalidPeriod, PeriodOutOfRange, parse_day
from paperfeed.domain.query import parse_query
from paperfeed.domain.results import PaperSearch, SearchHit
from paperfeed.domain.search import SearchFilters
from paperfeed.domain.wording import count

from . import rendering
from .deps import AppDep
from .evidence import ROLE_CHOICES, EvidenceView, evidence_view, role_choice
from .mutes import MuteNote, apply_mutes
from .rendering import absolute_url, error_page
from .views import PageLink, PageMeta, PageNumber, PaperView, clip, page_links, paper_view

__all__ = ["CATEGORY_CHOICES", "form_categories", "form_day", "router", "search_view"]

router = APIRouter(include_in_schema=False)
CATEGORY_CHOICES = sorted(set(SUBJECT_CODES.values()))

SEARCH_PAGE_SIZE = 20
_EXAMPLES = (
    "diffusion transformer",
    '"direct preference optimization"',
    'author:"Yann LeCun"',
    "mixture of experts year:2025",
    "cat:cs.CL retrieval augmented generation",
    "video generation -survey",
)


@dataclass(frozen=True, slots=True)
class Example:
    q: str
    url: str


@dataclass
class SearchView:
    """What ``search.html`` shows: the form as submitted, problems with it, and one page of hits."""

    q: str
    date_from: str
    date_to: str
    cat: str
    has_code: bool
    topic: int | None
    topic_choices: list[tuple[int, str]]  # (id, label) of every topic, for the select
    filters_active: bool
    clear_url: str
    category_choices: list[str]
    has_quotes: bool
    examples: list[Example]
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    items: list[PaperView] = field(default_factory=list)
    offset: int = 0
    range_label: str = ""
    pages: list[PageLink] = field(default_factory=list)
    page_number: int = 1
    prev_url: str | None = None
    next_url: str | None = None
    muted: MuteNote | None = None  # hits the reader's mute rules left out of this page
    store_papers: int | None = None  # no hits: how many papers the instance holds (0: say so, not "no match")
    filters: SearchFilters = field(default_factory=SearchFilters)  # as understood from the fields
    question: bool = False  # the query reads as a question or claim: the Evidence view is offered
    evidence: EvidenceView | None = None  # the Evidence view (view=evidence) instead of papers
    role_choices: tuple[tuple[str, str], ...] = ROLE_CHOICES

    @property
    def papers_url(self) -> str:
        """This search as papers (the switch's first tab)."""
        return _search_url(self.q, self.date_from, self.date_to, self.cat, self.has_code, topic=self.topic)

    @property
    def evidence_every_role_url(self) -> str:
        """This search as evidence, sentences of every role."""
        return _search_url(
            self.q, self.date_from, self.date_to, self.cat, self.has_code, topic=self.topic, view="evidence"
        )

    @property
    def evidence_url(self) -> str:
        """This search as evidence: the sentences of the papers that bear on it."""
        role = self.evidence.role if self.evidence is not None else ""
        return _search_url(
            self.q,
            self.date_from,
            self.date_to,
            self.cat,
            self.has_code,
            topic=self.topic,
            view="evidence",
            role=role,
        )

    @property
    def export_query(self) -> str:
        """The query string of this search for ``/search/export`` (its download links)."""
        url = _search_url(self.q, self.date_from, self.date_to, self.cat, self.has_code, topic=self.topic)
        return url.partition("?")[2]


def _search_url(
    q: str,
    date_from: str = "",
    date_to: str = "",
    cat: str = "",
    code: bool = False,
    page: int = 1,
    *,
    topic: int | None = None,
    view: str = "",
    role: str = "",
) -> str:
    params = {
        "q": q,
        "view": view,
        "role": role,
        "from": date_from,
        "to": date_to,
        "cat": cat,
        "code": "1" if code else "",
        "topic": "" if topic is None else str(topic),
        "page": page,
    }
    kept = {k: v for k, v in params.items() if v and not (k == "page" and v == 1)}
    return "/search?" + urlencode(kept) if kept else "/search"


def form_day(text: str, label: str, problems: list[str]) -> date | None:
    """A filter field's day, or None with a message in ``problems`` (shared with saved searches)."""
    if not text.strip():
        return None
    try:
        return parse_day(text)
    except PeriodOutOfRange as exc:
        problems.append(f"“{label}”: {exc}; it was ignored.")
        return None
    except InvalidPeriod:
        problems.append(f"“{label}” must be a date like 2025-03-18 (got “{clip(text, 40)}”); it was ignored.")
        return None


def form_categories(text: str, problems: list[str]) -> tuple[str, ...]:
    """Categories from the filter field, normalised exactly as ``cat:`` in a query is."""
    parts = [p for p in text.replace(",", " ").split() if p]
    if not parts:
        return ()
    found = parse_query("cat:" + ",".join(parts)).filters.categories
    if len(found) < len(set(parts)):
        problems.append(
            "Some categories were not understood and were ignored: use arXiv codes such as cs.CL or hep-th."
        )
    return found


def search_view(
    search: PaperSearch,
    q: str,
    date_from: str,
    date_to: str,
    cat: str,
    code: str,
    page: int,
    topic: int | None = None,
    topic_choices: list[tuple[int, str]] | None = None,
    mute: Callable[[Sequence[SearchHit]], tuple[list[SearchHit], MuteNote | None]] | None = None,
    *,
    run: bool = True,
) -> SearchView:
    """Run the search the form describes; bad filter values become messages, not errors.

    The hits' papers carry the counts pages show (search reads through the visible-papers lookup);
    ``topic`` is a live topic's id (the route checked it); ``mute`` leaves out the reader's muted hits.
    """
    q = q.strip()[:1000]
    problems: list[str] = []
    start = form_day(date_from, "From", problems)
    end = form_day(date_to, "To", problems)
    if start and end and start > end:
        start, end = end, start
        problems.append("“From” was after “To”; they were swapped.")
    categories = form_categories(cat, problems)
    has_code = code.lower() in ("1", "true", "on", "yes")
    filters = SearchFilters(start, end, categories, True if has_code else None, topic=topic)
    form = {
        "date_from": start.isoformat() if start else "",
        "date_to": end.isoformat() if end else "",
        "cat": ", ".join(categories),
    }
    view = SearchView(
        q=q,
        has_code=has_code,
        topic=topic,
        topic_choices=topic_choices or [],
        filters_active=filters.active,
        clear_url=_search_url(q),
        category_choices=CATEGORY_CHOICES,
        has_quotes='"' in q,
        examples=[Example(e, _search_url(e)) for e in _EXAMPLES],
        problems=problems,
        date_from=form["date_from"],
        date_to=form["date_to"],
        cat=form["cat"],
        filters=filters,
        question=looks_like_question(q),
    )
    if not q or not run:
        if filters.active and not q:
            view.problems.append(
                "Type some words to search for: the filters narrow a search, they are not one."
            )
        return view
    offset = (page - 1) * SEARCH_PAGE_SIZE
    result = search.search(q, filters, limit=SEARCH_PAGE_SIZE, offset=offset)
    view.notes = list(result.notes)
    view.offset = offset
    hits = list(result.hits)
    if mute is not None:
        hits, view.muted = mute(hits)
    view.items = [
        paper_view(
            hit.paper,
            title_spans=hit.title_spans,
            abstract_spans=hit.abstract_spans,
            with_abstract=False,
            with_snippet=True,
        )
        for hit in hits
    ]
    if view.items:
        noun = "result" if result.total == 1 else "results"
        span = f"{offset + 1}–{offset + len(view.items)}"
        # a capped total is the best candidates of each engine, not every match: never shown as a count
        view.range_label = (
            f"{span} of the best {result.total} {noun}"
            if result.capped
            else f"{span} of {result.total} {noun}"
        )
    elif result.total:
        view.problems.append(
            f"There are only {count(result.total, 'result')}; this page is past the last one."
        )
    last = max(1, -(-result.total // SEARCH_PAGE_SIZE))
    if last > 1:

        def url(number: int) -> str:
            return _search_url(
                q, form["date_from"], form["date_to"], form["cat"], has_code, number, topic=topic
            )

        view.pages = page_links(min(page, last), last, url)
        view.page_number = page
        view.prev_url = url(min(page - 1, last)) if page > 1 else None
        view.next_url = url(page + 1) if page < last else None
    return view


@router.get("/search", response_class=HTMLResponse)
def search_page(
    request: Request,
    app: AppDep,
    q: str = "",
    date_from: str = Query("", alias="from"),
    date_to: str = Query("", alias="to"),
    cat: str = "",
    code: str = "",
    topic: str = Query("", max_length=40),
    page: PageNumber = 1,
    view: str = Query("", max_length=20),
    role: str = Query("", max_length=100),
) -> Response:
    topic_id: int | None = None
    if topic.strip():
        raw = topic.strip()
        if not (raw.isascii() and raw.isdigit() and len(raw) < 10):
            return error_page(
                request, 400, "Bad topic", f"topic must be a topic number such as 12 (got “{clip(raw, 40)}”)."
            )
        found = app.catalogue.topic_picks.resolve(int(raw))
        if found is None:
            return error_page(
                request, 400, "No such topic", f"topic: there is no topic {int(raw)} (any more)."
            )
        if found.id != int(raw):  # a rebuild removed it: the same search in its successor
            flag = code.lower() in ("1", "true", "on", "yes")
            moved = _search_url(q, date_from, date_to, cat, flag, page, topic=found.id)
            return RedirectResponse(moved, status_code=301)
        topic_id = found.id
    choices = [(t.id, t.label) for t in sorted(app.catalogue.topics.topics(), key=lambda t: t.label)]
    as_evidence = view.strip().lower() == "evidence"
    shown = search_view(
        app.search.hybrid,
        q,
        date_from,
        date_to,
        cat,
        code,
        page,
        topic=topic_id,
        topic_choices=choices,
        mute=lambda hits: apply_mutes(request, hits, lambda h: h.paper),
        run=not as_evidence,
    )
    if as_evidence:  # the Evidence view: the papers' sentences that bear on the query (web/evidence.py)
        value, roles = role_choice(role, shown.problems)
        shown.evidence = EvidenceView(role=value)
        if shown.q:
            shown.evidence = evidence_view(
                app.search.evidence,
                shown.q,
                shown.filters,
                value,
                roles,
                mute=lambda groups: apply_mutes(request, groups, lambda g: g.paper),
            )
            shown.notes = shown.evidence.notes
    if not shown.items:  # nothing to show: say so if the instance holds no papers at all, not "no match"
        shown.store_papers = app.catalogue.feeds.count_papers()
    return _search_page(request, app, shown)


def _search_page(request: Request, app: AppDep, view: SearchView) -> Response:
    """The search page for ``view`` (papers, or the Evidence view), with its headers and metadata."""
    degraded = bool(view.notes)  # a part of search failed (rendering.search_notes_headers)
    coverage = app.indexes.coverage.note()  # after the search, which reloads a vector index saved meanwhile
    if coverage:
        view.notes.append(coverage)
    if view.q:
        title = f"“{clip(view.q, 60)}” · Search"
        description = f"Papers matching {view.q}" + (f": {view.range_label}" if view.range_label else "")
        if view.evidence is not None:
            title = f"“{clip(view.q, 60)}” · Evidence"
            description = f"Sentences of papers that bear on {view.q}"
    else:
        title, description = "Search papers", "Search papers by topic, title, author, category and date."
    path = (
        view.evidence_url
        if view.evidence is not None
        else _search_url(
            view.q, view.date_from, view.date_to, view.cat, view.has_code, view.page_number, topic=view.topic
        )
    )
    rss = ((f"Search: {clip(view.q, 60)}", "/rss/search?" + urlencode({"q": view.q})),) if view.q else ()
    meta = PageMeta(title, clip(description), absolute_url(request, path), noindex=bool(view.q), feeds=rss)
    headers = rendering.search_notes_headers(degraded, coverage)
    return rendering.page(request, "search.html", meta, nav="search", headers=headers, search=view)
