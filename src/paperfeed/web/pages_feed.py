"""The feed pages: a day's papers (the home page is the latest day), a week's, a month's, and trending.

Every page works without JavaScript (``static/app.js`` only adds a copy button and small comforts).
Untrusted text reaches templates only through :mod:`.markup` (escaped, with our own ``<mark>`` and
MathML) or Jinja's autoescaping, and every page carries a Content-Security-Policy that allows no inline
script (:mod:`.rendering`), so a hostile title cannot run code even if an escaping bug slipped in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import date

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup

from paperfeed.domain.citation_trend import CitedPage, CitedParams
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
from paperfeed.domain.wording import count
from paperfeed.services.feed import FeedService

from . import rendering
from .deps import Feeds, app_of
from .mutes import MuteNote, apply_mutes
from .rendering import absolute_url, error_page
from .rising import RisingBox, rising_box
from .uploads import upload_limits
from .views import (
    NavLink,
    PageLink,
    PageMeta,
    PageNumber,
    PaperView,
    clip,
    day_label,
    long_day_label,
    page_links,
    paper_view,
    plural,
)

__all__ = ["router"]

router = APIRouter(include_in_schema=False)
DAY_PAGE_SIZE = 100
PERIOD_PAGE_SIZE = 50
TRENDING_SIZE = 50

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
    unlisted_papers: int = 0  # papers in the store when none is listed on any day
    rising: RisingBox | None = None  # "Rising this week" of the day's or week's ISO week
    muted: MuteNote | None = None  # papers the reader's mute rules left out of this page


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
    meta = PageMeta(title, clip(description), absolute_url(request, path), feeds=rss)
    return rendering.page(request, "feed.html", meta, nav="daily", feed=view)


@router.get("/", response_class=HTMLResponse)
def home(request: Request, feeds: Feeds, page: PageNumber = 1) -> HTMLResponse:
    """The latest day that has papers."""
    return _day_response(request, feeds, None, page, "/")


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
def day_page(request: Request, feeds: Feeds, day: str, page: PageNumber = 1) -> HTMLResponse:
    try:
        parsed = parse_day(day)
    except InvalidPeriod as exc:
        return _bad_period(request, exc, "No such day", f"{exc}.")
    return _day_response(request, feeds, parsed, page, f"/papers/date/{parsed.isoformat()}")


def _bad_period(request: Request, exc: InvalidPeriod, heading: str, message: str) -> HTMLResponse:
    """A day, week or month that does not exist is a 404; one outside the supported range is a 400."""
    if isinstance(exc, PeriodOutOfRange):
        return error_page(request, 400, "Date out of range", message)
    return error_page(request, 404, heading, message)


def _day_response(
    request: Request, feeds: FeedService, day: date | None, page: int, path: str
) -> HTMLResponse:
    latest = feeds.latest_day()
    if latest is None and not feeds.papers_page(None, 1).items:
        return first_run_page(request)
    feed = feeds.day(day, limit=DAY_PAGE_SIZE, offset=(page - 1) * DAY_PAGE_SIZE)
    items, muted = apply_mutes(request, feed.items, lambda i: i.paper)
    view = _day_view(replace(feed, items=tuple(items)), page)
    view.muted = muted
    view.rising = rising_box(request, feed.day)
    view.last_iso = latest.isoformat() if latest else None
    view.store_empty = latest is None
    if latest is None:
        view.unlisted_papers = feeds.count_papers()
    rss = f"/rss/daily?date={day.isoformat()}" if day else "/rss/daily"
    label = f"Papers of {_short(day)}" if day else "Daily papers"
    return _feed_response(request, view, f"Daily Papers, {_short(feed.day)}", path, ((label, rss),))


# -- first run ----------------------------------------------------------------------------------------

# Settings that connect an instance to its sources (their PAPERFEED_* variables are listed on the page).
_SOURCE_SETTING_PREFIXES = ("hf_", "arxiv_", "http_", "contact_email", "jobs_")


def source_settings(request: Request) -> list[tuple[str, str]]:
    """``(PAPERFEED_NAME, description)`` of every setting about the sources, from the settings model
    itself (so the page lists new ones as they are added)."""
    model = type(app_of(request).settings)
    return [
        (f"PAPERFEED_{name.upper()}", info.description or "")
        for name, info in model.model_fields.items()
        if name.startswith(_SOURCE_SETTING_PREFIXES)
    ]


def first_run_page(request: Request) -> HTMLResponse:
    """What a store without a single paper shows instead of an empty feed: what paperfeed is, how to
    import a file (an administrator can drop one on the page), how to connect the sources."""
    meta = PageMeta(
        "Welcome to paperfeed",
        "A new paperfeed instance: import papers from a file or connect it to Hugging Face and arXiv.",
        absolute_url(request, "/"),
        noindex=True,
    )
    return rendering.page(
        request,
        "first_run.html",
        meta,
        nav="daily",
        cache=rendering.NO_STORE,
        upload=upload_limits(request),
        source_settings=source_settings(request),
    )


@router.get("/papers/week/{week}", response_class=HTMLResponse)
def week_page(request: Request, feeds: Feeds, week: str, page: PageNumber = 1) -> HTMLResponse:
    return _period_response(request, feeds, "week", week, page)


@router.get("/papers/month/{month}", response_class=HTMLResponse)
def month_page(request: Request, feeds: Feeds, month: str, page: PageNumber = 1) -> HTMLResponse:
    return _period_response(request, feeds, "month", month, page)


def _period_response(request: Request, feeds: FeedService, kind: str, label: str, page: int) -> HTMLResponse:
    offset = (page - 1) * PERIOD_PAGE_SIZE
    try:
        if kind == "week":
            feed = feeds.week(label, limit=PERIOD_PAGE_SIZE, offset=offset)
        else:
            feed = feeds.month(label, limit=PERIOD_PAGE_SIZE, offset=offset)
    except InvalidPeriod as exc:
        return _bad_period(request, exc, f"No such {kind}", f"{exc}.")
    items, muted = apply_mutes(request, feed.items, lambda i: i.paper)
    view = _period_view(replace(feed, items=tuple(items)), page)
    view.muted = muted
    if kind == "week":  # a month spans several weeks: which one would rise is not the month's story
        view.rising = rising_box(request, feed.period.start)
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
    now_note: str | None = None  # ages count from the archive's end, not from today: the page says so
    muted: MuteNote | None = None


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
        "trend. The reference time is the site's “now”: the clock, or, once the newest papers are more "
        "than a week old, the store's latest activity (the end of the newest listed day or the newest "
        "publication), so an archive ranks its last month rather than an empty one.</p>"
    ).format(
        alpha=params.alpha,
        stars=params.alpha * math.log1p(1000),
        gravity=params.gravity,
        ratio=two_vs_one_day,
        window=page.window_days,
        reference=f"{day_label(reference)} {reference:%H:%M} UTC",
    )
    total = f"{plural(page.total, 'paper')} with upvotes or stars"
    until = f"{day_label(reference)} {reference:%H:%M} UTC"
    last = (
        f"the {count(page.window_days, 'day')} up to {until}, the newest papers"
        if page.now_note
        else f"the last {count(page.window_days, 'day')} (up to {until})"
    )
    subheading = (
        f"The top {len(items)} of {total} in {last}, ranked by a score that balances votes and stars "
        "against age."
        if items
        else f"No paper with upvotes or stars was first seen in {last}."
    )
    return TrendingView(
        items=items,
        formula=page.formula,
        explanation=explanation,
        subheading=subheading,
        now_note=page.now_note,
    )


def _cited_view(page: CitedPage, params: CitedParams) -> TrendingView:
    """``/trending?sort=cited``: papers by citation velocity (docs/citations.md)."""
    items = [
        paper_view(
            t.paper,
            score_label=(
                f"{t.velocity:.2g} citations/month · {plural(t.citations_last_12_months, 'citation')} in "
                f"12 months · {plural(t.citations, 'citation')} in all"
            ),
        )
        for t in page.items
    ]
    explanation = Markup(
        "<p>How fast a paper is cited now, whatever its age: the citations dated in the twelve months "
        "before {as_of}, per month of that year the paper has existed. A paper a year old or more divides "
        "by 12; a younger one by its age in months, but by at least {m:g}, so two citations in a paper's "
        "first week do not outrank a steady rate. Ties go to the paper with more citations in all.</p>"
        "<p>Counts come from the citation graph this instance harvested (Semantic Scholar, OpenAlex); "
        "citing works without a date are not counted.</p>"
    ).format(as_of=day_label(page.as_of), m=params.min_months)
    return TrendingView(
        items=items,
        formula=page.formula,
        explanation=explanation,
        subheading=(
            f"The top {len(items)} of {plural(page.total, 'paper')} cited in the last twelve months, "
            "ranked by citations per month."
            if items
            else "No paper of this instance has dated citations from the last twelve months."
        ),
    )


@router.get("/trending", response_class=HTMLResponse)
def trending_page(request: Request, feeds: Feeds, sort: str = "") -> HTMLResponse:
    if sort not in ("", "score", "cited"):
        return error_page(request, 400, "Unknown order", f"sort must be score or cited, not {sort[:40]!r}.")
    if sort == "cited":
        cited = app_of(request).catalogue.cited_trending
        found = cited.page(limit=TRENDING_SIZE)
        kept, muted = apply_mutes(request, found.items, lambda t: t.paper)
        view = replace(_cited_view(replace(found, items=tuple(kept)), cited.params), muted=muted)
        what = "Papers ranked by how fast they are cited now (citations per month, last 12 months)."
    else:
        found_trending = feeds.trending(limit=TRENDING_SIZE)
        kept_trending, muted = apply_mutes(request, found_trending.items, lambda t: t.paper)
        view = replace(
            _trending_view(replace(found_trending, items=tuple(kept_trending)), feeds), muted=muted
        )
        what = "Papers ranked by upvotes and GitHub stars, decayed by age."
    top = ", ".join(v.title_text for v in view.items[:3])
    meta = PageMeta(
        "Trending papers",
        clip(what + (f" Top: {top}" if top else "")),
        absolute_url(request, "/trending" + ("?sort=cited" if sort == "cited" else "")),
        feeds=(("Trending papers", "/rss/trending"),),
    )
    return rendering.page(request, "trending.html", meta, nav="trending", trending=view, sort=sort or "score")
