"""Server-rendered HTML pages: daily/weekly/monthly feeds, trending, search and paper pages.

Every page works without JavaScript (``static/app.js`` only adds a copy button and small comforts).
Untrusted text reaches templates only through :mod:`.markup` (escaped, with our own ``<mark>`` and
MathML) or Jinja's autoescaping, and pages are served with a Content-Security-Policy that allows no
inline script, so a hostile title cannot run code even if an escaping bug slipped in.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup
from starlette.types import Scope

from paperfeed import __version__
from paperfeed.bootstrap import App
from paperfeed.domain.arxiv_subjects import SUBJECT_CODES
from paperfeed.domain.citation import bibtex
from paperfeed.domain.feed import (
    DayFeed,
    FeedItem,
    InvalidPeriod,
    Period,
    PeriodFeed,
    PeriodOutOfRange,
    TrendingPage,
    parse_day,
    parse_month,
    parse_week,
)
from paperfeed.domain.ids import InvalidPaperId, normalize_paper_id
from paperfeed.domain.models import Paper
from paperfeed.domain.query import parse_query
from paperfeed.domain.results import PaperSearch
from paperfeed.domain.search import SearchFilters
from paperfeed.services.feed import FeedService

from .headers import CSP
from .markup import plain_text, render_text
from .views import (
    NavLink,
    PageLink,
    PageMeta,
    PageNumber,
    PaperView,
    author_search_url,
    count_label,
    day_label,
    long_day_label,
    page_links,
    paper_url,
    paper_view,
    plural,
    safe_url,
)

__all__ = ["CSP", "error_page", "form_categories", "form_day", "render_page", "router"]

SITE_NAME = "paperfeed"
_HERE = Path(__file__).resolve().parent
_STATIC = _HERE / "static"
DAY_PAGE_SIZE = 100
PERIOD_PAGE_SIZE = 50
TRENDING_SIZE = 50
SIMILAR_SIZE = 6
CATEGORY_CHOICES = sorted(set(SUBJECT_CODES.values()))

_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def _static_versions() -> dict[str, str]:
    """Content hashes of the static files, so their URLs change when they do (long cache, no staleness)."""
    return {
        path.name: hashlib.blake2b(path.read_bytes(), digest_size=5).hexdigest()
        for path in _STATIC.iterdir()
        if path.is_file()
    }


_VERSIONS = _static_versions()


class _VersionedStaticFiles(StaticFiles):
    """Static files cached for a year when asked for by their current ``?v=`` hash, revalidated otherwise."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        version = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("v", [""])[0]
        fresh = response.status_code == 200 and version and version == _VERSIONS.get(path)
        response.headers["Cache-Control"] = "public, max-age=31536000, immutable" if fresh else "no-cache"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response


router = APIRouter(include_in_schema=False)
router.mount("/static", _VersionedStaticFiles(directory=_STATIC), name="static")


def static_url(name: str) -> str:
    return f"/static/{name}?v={_VERSIONS[name]}"


_env = Environment(
    loader=FileSystemLoader(_HERE / "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=False,
    lstrip_blocks=False,
)
_env.globals.update(
    site_name=SITE_NAME,
    version=__version__,
    static_url=static_url,
    author_search_url=author_search_url,
)
_env.filters.update(rich=render_text, plain=plain_text)
templates = Jinja2Templates(env=_env)


def render_page(
    request: Request,
    name: str,
    page: PageMeta,
    nav: str,
    status_code: int = 200,
    context: dict[str, Any] | None = None,
    **values: object,
) -> HTMLResponse:
    """A page of the site: the template with its meta, the active nav item and its values."""
    return templates.TemplateResponse(
        request,
        name,
        {"page": page, "nav": nav, **(context or {}), **values},
        status_code=status_code,
        headers=_HEADERS,
    )


def _app(request: Request) -> App:
    app: App = request.state.app
    return app


def _feeds(request: Request) -> FeedService:
    return _app(request).feeds


def _absolute(request: Request, path: str) -> str:
    return str(request.base_url).rstrip("/") + path


def _not_found(
    request: Request, heading: str, message: str, *, query: str = "", arxiv_url: str | None = None
) -> HTMLResponse:
    return error_page(request, 404, heading, message, query=query, arxiv_url=arxiv_url)


def error_page(
    request: Request,
    status: int,
    heading: str,
    message: str,
    *,
    query: str = "",
    arxiv_url: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> HTMLResponse:
    """A styled error page with a search box, in the site's layout (for error handlers to give browsers)."""
    missing = MissingView(heading, message, query, arxiv_url, status)
    page = PageMeta(heading, message, _absolute(request, request.url.path), noindex=True)
    response = render_page(request, "not_found.html", page, nav="", status_code=status, missing=missing)
    response.headers.update(headers or {})
    return response


# -- feeds --------------------------------------------------------------------------------------------


@dataclass
class FeedView:
    """What ``feed.html`` shows for a day, week or month."""

    period: str  # day | week | month
    period_noun: str
    heading: Markup
    subheading: str
    switch: list[tuple[str, str, str]]
    items: list[PaperView]
    offset: int
    empty_phrase: str
    anchor_iso: str
    prev: NavLink | None = None
    next: NavLink | None = None
    skip_notes: list[str] = field(default_factory=list)
    first_iso: str | None = None
    last_iso: str | None = None
    pages: list[PageLink] = field(default_factory=list)
    page_number: int = 1
    prev_page_url: str | None = None
    next_page_url: str | None = None
    store_empty: bool = False  # no papers listed on any day: say how to get some


def _switch(anchor: date) -> list[tuple[str, str, str]]:
    return [
        ("Day", "day", f"/papers/date/{anchor.isoformat()}"),
        ("Week", "week", f"/papers/week/{Period.of('week', anchor).label}"),
        ("Month", "month", f"/papers/month/{Period.of('month', anchor).label}"),
    ]


def _skipped(count: int) -> str:
    return "" if count <= 0 else f"skips {count} day{'s' if count != 1 else ''} without papers"


def _cards(items: tuple[FeedItem, ...]) -> list[PaperView]:
    return [paper_view(item.paper, upvotes=item.upvotes) for item in items]


def _pager(view: FeedView, total: int, size: int, page: int, base: str) -> None:
    last = max(1, -(-total // size))
    if last <= 1:
        return

    def url(number: int) -> str:
        return base if number == 1 else f"{base}?page={number}"

    view.pages = page_links(page, last, url)
    view.page_number = page
    view.prev_page_url = url(page - 1) if page > 1 else None
    view.next_page_url = url(page + 1) if page < last else None


def _day_view(feed: DayFeed, page: int) -> FeedView:
    day = feed.day
    papers = plural(feed.total, "paper")
    view = FeedView(
        period="day",
        period_noun="day",
        heading=Markup('<span class="kicker">Daily Papers</span> ') + long_day_label(day),
        subheading=f"{papers}, ranked by upvotes" if feed.total else "No papers listed on this day",
        switch=_switch(day),
        items=_cards(feed.items),
        offset=feed.offset,
        empty_phrase=f"on {long_day_label(day)}",
        anchor_iso=day.isoformat(),
    )
    if feed.prev_day:
        note = _skipped(feed.skipped_before)
        view.prev = NavLink(f"/papers/date/{feed.prev_day.isoformat()}", _short(feed.prev_day), note)
        if note:
            view.skip_notes.append(
                f"The previous day with papers is {long_day_label(feed.prev_day)}: "
                f"{feed.skipped_before} day{'s' if feed.skipped_before != 1 else ''} without papers "
                "(weekends, holidays) in between."
            )
    if feed.next_day:
        note = _skipped(feed.skipped_after)
        view.next = NavLink(f"/papers/date/{feed.next_day.isoformat()}", _short(feed.next_day), note)
        if note:
            view.skip_notes.append(
                f"The next day with papers is {long_day_label(feed.next_day)}: "
                f"{feed.skipped_after} day{'s' if feed.skipped_after != 1 else ''} without papers skipped."
            )
    _pager(view, feed.total, DAY_PAGE_SIZE, page, f"/papers/date/{day.isoformat()}")
    return view


def _short(day: date) -> str:
    return f"{day:%a} {day.day} {day:%b %Y}"


def _period_title(period: Period) -> str:
    if period.kind == "week":
        year, week, _ = period.start.isocalendar()
        return f"Week {week}, {year}"
    return f"{period.start:%B %Y}"


def _period_range(period: Period) -> str:
    return f"{day_label(period.start)} – {day_label(period.end)}"


def _period_view(feed: PeriodFeed, page: int) -> FeedView:
    period = feed.period
    kind = period.kind
    papers = plural(feed.total, "paper")
    kicker = "Weekly Papers" if kind == "week" else "Monthly Papers"
    view = FeedView(
        period=kind,
        period_noun=kind,
        heading=Markup(f'<span class="kicker">{kicker}</span> ') + _period_title(period),
        subheading=f"{_period_range(period)} · {papers}, ranked by upvotes",
        switch=_switch(period.start),
        items=_cards(feed.items),
        offset=feed.offset,
        empty_phrase=f"in {_period_title(period)} ({_period_range(period)})",
        anchor_iso=period.start.isoformat(),
    )
    parse = parse_week if kind == "week" else parse_month
    if feed.prev_label:
        view.prev = NavLink(f"/papers/{kind}/{feed.prev_label}", _period_title(parse(feed.prev_label)))
    if feed.next_label:
        view.next = NavLink(f"/papers/{kind}/{feed.next_label}", _period_title(parse(feed.next_label)))
    _pager(view, feed.total, PERIOD_PAGE_SIZE, page, f"/papers/{kind}/{period.label}")
    return view


def _feed_response(
    request: Request, view: FeedView, title: str, path: str, rss: tuple[tuple[str, str], ...] = ()
) -> HTMLResponse:
    top = ", ".join(v.title_text for v in view.items[:3])
    description = f"{view.subheading}." + (f" Top: {top}" if top else "")
    page = PageMeta(title, _clip(description), _absolute(request, path), feeds=rss)
    return render_page(request, "feed.html", page, nav="daily", feed=view)


def _clip(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[: text.rfind(" ", 0, limit - 1)].rstrip(",;:") + "…"


@router.get("/", response_class=HTMLResponse)
def home(request: Request, page: PageNumber = 1) -> HTMLResponse:
    """The latest day that has papers."""
    return _day_response(request, None, page, "/")


@router.get("/papers/date", response_class=HTMLResponse, response_model=None)
def jump_to_day(request: Request, date: str = "") -> Response:
    """Target of the no-JavaScript date picker: ``?date=YYYY-MM-DD`` → that day's page."""
    if not date.strip():
        return RedirectResponse("/", status_code=303)
    try:
        day = parse_day(date)
    except InvalidPeriod as exc:
        return _bad_period(request, exc, "That is not a date", f"{exc}. Pick a day with the date field.")
    return RedirectResponse(f"/papers/date/{day.isoformat()}", status_code=303)


@router.get("/papers/date/{day}", response_class=HTMLResponse)
def day_page(request: Request, day: str, page: PageNumber = 1) -> HTMLResponse:
    try:
        parsed = parse_day(day)
    except InvalidPeriod as exc:
        return _bad_period(request, exc, "No such day", f"{exc}.")
    return _day_response(request, parsed, page, f"/papers/date/{parsed.isoformat()}")


def _bad_period(request: Request, exc: InvalidPeriod, heading: str, message: str) -> HTMLResponse:
    """A day, week or month that does not exist is a 404; one outside the supported range is a 400."""
    if isinstance(exc, PeriodOutOfRange):
        return error_page(request, 400, "Date out of range", message)
    return _not_found(request, heading, message)


def _day_response(request: Request, day: date | None, page: int, path: str) -> HTMLResponse:
    feeds = _feeds(request)
    feed = feeds.day(day, limit=DAY_PAGE_SIZE, offset=(page - 1) * DAY_PAGE_SIZE)
    view = _day_view(feed, page)
    latest = feeds.latest_day()
    view.last_iso = latest.isoformat() if latest else None
    view.store_empty = latest is None
    rss = f"/rss/daily?date={day.isoformat()}" if day else "/rss/daily"
    label = f"Papers of {_short(day)}" if day else "Daily papers"
    return _feed_response(request, view, f"Daily Papers, {_short(feed.day)}", path, ((label, rss),))


@router.get("/papers/week/{week}", response_class=HTMLResponse)
def week_page(request: Request, week: str, page: PageNumber = 1) -> HTMLResponse:
    return _period_response(request, "week", week, page)


@router.get("/papers/month/{month}", response_class=HTMLResponse)
def month_page(request: Request, month: str, page: PageNumber = 1) -> HTMLResponse:
    return _period_response(request, "month", month, page)


def _period_response(request: Request, kind: str, label: str, page: int) -> HTMLResponse:
    feeds = _feeds(request)
    offset = (page - 1) * PERIOD_PAGE_SIZE
    try:
        if kind == "week":
            feed = feeds.week(label, limit=PERIOD_PAGE_SIZE, offset=offset)
        else:
            feed = feeds.month(label, limit=PERIOD_PAGE_SIZE, offset=offset)
    except InvalidPeriod as exc:
        return _bad_period(request, exc, f"No such {kind}", f"{exc}.")
    view = _period_view(feed, page)
    title = f"{'Weekly' if kind == 'week' else 'Monthly'} Papers, {_period_title(feed.period)}"
    return _feed_response(request, view, title, f"/papers/{kind}/{feed.period.label}")


# -- trending -----------------------------------------------------------------------------------------


def _age(hours: float) -> str:
    if hours < 48:
        return f"{hours:.0f} h old"
    return f"{hours / 24:.0f} days old"


@dataclass(frozen=True, slots=True)
class TrendingView:
    items: list[PaperView]
    formula: str
    explanation: Markup
    subheading: str


@dataclass(frozen=True, slots=True)
class MissingView:
    heading: str
    message: str
    query: str = ""
    arxiv_url: str | None = None
    status: int = 404


def _trending_view(page: TrendingPage, feeds: FeedService) -> TrendingView:
    items = [
        paper_view(
            t.paper,
            upvotes=t.upvotes,
            score_label=(
                f"Score {t.score:.3g} · {plural(t.upvotes, 'upvote')} · {plural(t.stars, 'GitHub star')} · "
                f"{_age(t.age_hours)}"
            ),
        )
        for t in page.items
    ]
    params = feeds.params
    reference = page.reference_time
    two_vs_one_day = ((48 + 2) / (24 + 2)) ** params.gravity
    explanation = Markup(
        "<p>Upvotes and GitHub stars count for a paper and age counts against it, as on Hacker News. "
        "<em>age_hours</em> is the time since the paper first appeared on the daily list (for a paper "
        "never listed, since its arXiv publication); the +1 lets a fresh paper without votes rank among "
        "its peers and the +2 keeps brand-new papers from dividing by almost zero. The stars term is "
        "damped by a logarithm so a famous repository cannot outrank reader interest: with α = {alpha:g}, "
        "1,000 stars weigh as much as {stars:.0f} upvotes. The gravity g = {gravity:g} means a "
        "two-day-old paper needs {ratio:.1f}× the upvotes of a one-day-old one to score the same.</p>"
        "<p>Only papers first seen in the {window} days before the reference time ({reference}) can "
        "trend. The reference time is now, or the store's latest activity (the end of the newest listed "
        "day or the newest publication) when the data stops earlier.</p>"
    ).format(
        alpha=params.alpha,
        stars=params.alpha * math.log1p(1000),
        gravity=params.gravity,
        ratio=two_vs_one_day,
        window=page.window_days,
        reference=f"{day_label(reference)} {reference:%H:%M} UTC",
    )
    total = f"{plural(page.total, 'paper')} with upvotes or stars"
    return TrendingView(
        items=items,
        formula=page.formula,
        explanation=explanation,
        subheading=f"The top {len(items)} of {total} in the last {page.window_days} days, "
        "ranked by a score that balances votes and stars against age.",
    )


@router.get("/trending", response_class=HTMLResponse)
def trending_page(request: Request) -> HTMLResponse:
    feeds = _feeds(request)
    result = feeds.trending(limit=TRENDING_SIZE)
    view = _trending_view(result, feeds)
    top = ", ".join(v.title_text for v in view.items[:3])
    page = PageMeta(
        "Trending papers",
        _clip("Papers ranked by upvotes and GitHub stars, decayed by age." + (f" Top: {top}" if top else "")),
        _absolute(request, "/trending"),
        feeds=(("Trending papers", "/rss/trending"),),
    )
    return render_page(request, "trending.html", page, nav="trending", trending=view)


# -- search -------------------------------------------------------------------------------------------

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


def _search_url(
    q: str, date_from: str = "", date_to: str = "", cat: str = "", code: bool = False, page: int = 1
) -> str:
    params = {"q": q, "from": date_from, "to": date_to, "cat": cat, "code": "1" if code else "", "page": page}
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
        problems.append(
            f"“{label}” must be a date like 2025-03-18 (got “{_clip(text, 40)}”); it was ignored."
        )
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
    shown: Callable[[list[Paper]], list[Paper]] = list,
) -> SearchView:
    """Run the search the form describes; bad filter values become messages, not errors.

    ``shown`` gives the papers the counts pages show (community votes and comments added).
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
    filters = SearchFilters(start, end, categories, True if has_code else None)
    form = {
        "date_from": start.isoformat() if start else "",
        "date_to": end.isoformat() if end else "",
        "cat": ", ".join(categories),
    }
    view = SearchView(
        q=q,
        has_code=has_code,
        filters_active=filters.active,
        clear_url=_search_url(q),
        category_choices=CATEGORY_CHOICES,
        has_quotes='"' in q,
        examples=[Example(e, _search_url(e)) for e in _EXAMPLES],
        problems=problems,
        date_from=form["date_from"],
        date_to=form["date_to"],
        cat=form["cat"],
    )
    if not q:
        if filters.active:
            view.problems.append(
                "Type some words to search for: the filters narrow a search, they are not one."
            )
        return view
    offset = (page - 1) * SEARCH_PAGE_SIZE
    result = search.search(q, filters, limit=SEARCH_PAGE_SIZE, offset=offset)
    view.notes = list(result.notes)
    view.offset = offset
    view.items = [
        paper_view(
            paper,
            title_spans=hit.title_spans,
            abstract_spans=hit.abstract_spans,
            with_abstract=False,
            with_snippet=True,
        )
        for hit, paper in zip(result.hits, shown([hit.paper for hit in result.hits]), strict=True)
    ]
    if view.items:
        noun = "result" if result.total == 1 else "results"
        view.range_label = f"{offset + 1}–{offset + len(view.items)} of {result.total} {noun}"
    elif result.total:
        view.problems.append(f"There are only {result.total} results; this page is past the last one.")
    last = max(1, -(-result.total // SEARCH_PAGE_SIZE))
    if last > 1:

        def url(number: int) -> str:
            return _search_url(q, form["date_from"], form["date_to"], form["cat"], has_code, number)

        view.pages = page_links(min(page, last), last, url)
        view.page_number = page
        view.prev_url = url(min(page - 1, last)) if page > 1 else None
        view.next_url = url(page + 1) if page < last else None
    return view


def _search_of(request: Request) -> PaperSearch:
    return _app(request).search


@router.get("/search", response_class=HTMLResponse)
def search_page(
    request: Request,
    q: str = "",
    date_from: str = Query("", alias="from"),
    date_to: str = Query("", alias="to"),
    cat: str = "",
    code: str = "",
    page: PageNumber = 1,
) -> HTMLResponse:
    view = search_view(
        _search_of(request),
        q,
        date_from,
        date_to,
        cat,
        code,
        page,
        _app(request).community.with_counts,
    )
    if view.q:
        title = f"“{_clip(view.q, 60)}” · Search"
        description = f"Papers matching {view.q}" + (f": {view.range_label}" if view.range_label else "")
    else:
        title, description = "Search papers", "Search papers by topic, title, author, category and date."
    path = _search_url(view.q, view.date_from, view.date_to, view.cat, view.has_code, view.page_number)
    rss = ((f"Search: {_clip(view.q, 60)}", "/rss/search?" + urlencode({"q": view.q})),) if view.q else ()
    meta = PageMeta(title, _clip(description), _absolute(request, path), noindex=bool(view.q), feeds=rss)
    return render_page(request, "search.html", meta, nav="search", search=view)


# -- paper pages ----------------------------------------------------------------------------------------


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
    """Papers nearest by embedding, or why there are none to show."""
    hits = search.similar(paper_id, limit=SIMILAR_SIZE)
    if not hits:
        return [], "No similar papers yet: they appear once papers are embedded (paperfeed index)."
    return [paper_view(paper, with_abstract=False) for paper in shown([hit.paper for hit in hits])], None


@router.get("/papers/{paper_id:path}", response_class=HTMLResponse, response_model=None)
def paper_page(request: Request, paper_id: str) -> Response:
    """A paper by any spelling of its id; other spellings redirect, versions show the same page."""
    try:
        parsed = normalize_paper_id(paper_id)
    except InvalidPaperId:
        return _not_found(
            request,
            "That is not a paper id",
            f"“{_clip(paper_id, 80)}” is not an arXiv id such as 2503.10613 or hep-th/9901001.",
            query=_clip(paper_id, 200),
        )
    canonical = str(parsed)  # keeps a requested version: /papers/2503.10613v2 is its own (same) page
    if paper_id != canonical:
        return RedirectResponse(paper_url(canonical), status_code=301)
    app = _app(request)
    detail = app.feeds.paper(canonical)
    if detail is None:
        arxiv = None if ":" in parsed.base else f"https://arxiv.org/abs/{canonical}"
        return _not_found(
            request,
            "Paper not found",
            f"No paper with id {canonical} is in this paperfeed instance.",
            query=parsed.base,
            arxiv_url=arxiv,
        )
    paper = detail.paper
    view = paper_view(paper)
    github = safe_url(paper.github_repo)
    project = safe_url(paper.project_page)
    similar, similar_note = _similar(_search_of(request), paper.id, app.community.with_counts)
    abstract_text = plain_text(paper.abstract) if paper.abstract else ""
    description = _clip(abstract_text or f"{view.title_text} by {', '.join(paper.authors[:3])}")
    meta = PageMeta(view.title_text, description, _absolute(request, paper_url(paper.id)), og_type="article")
    version_note = None
    if detail.requested_version is not None:
        latest = f" (the newest version known here is v{paper.version})" if paper.version else ""
        version_note = (
            f"You asked for version {detail.requested_version}: the arXiv links below point to it{latest}."
        )
    context = {
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
    return render_page(request, "paper.html", meta, nav="", context=context)
