"""RSS 2.0 and Atom 1.0 feeds of the daily papers, trending papers and any search, built with feedgen.

``/rss/daily`` (``?date=YYYY-MM-DD``, default the latest day), ``/rss/trending``, ``/rss/search?q=``, and
the same under ``/atom/``. Each item links to the paper's page on this site (``settings.base_url`` or the
URL the request came to) and carries the one-line summary (Hugging Face's, or the abstract's sentence
extracted as one, labelled which), the abstract, authors and arXiv categories.

Source text is untrusted (an imported abstract may hold ``<script>``), and feed readers render RSS
descriptions and Atom ``type="html"`` content as HTML once they decode the XML. So every text that a
reader treats as HTML is escaped first (:func:`_html`): the abstract reaches the reader as the text it
is, never as markup. Titles and names stay plain text (RSS titles, Atom ``type="text"``), as on pages.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Annotated, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from feedgen.feed import FeedGenerator
from markupsafe import escape

from paperfeed import __version__
from paperfeed.domain.feed import parse_day
from paperfeed.domain.models import Paper
from paperfeed.domain.wording import count

from .api import MAX_QUERY_CHARS, base_url, checked_query
from .deps import feeds_of, search_of

__all__ = ["FEED_SIZE", "Entry", "Kind", "render", "router"]

FEED_SIZE = 30
Kind = Literal["rss", "atom"]
_MEDIA = {"rss": "application/rss+xml; charset=utf-8", "atom": "application/atom+xml; charset=utf-8"}
# Characters XML 1.0 forbids (lxml refuses them); source text is cleaned, but feeds must never fail.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")

router = APIRouter(tags=["feeds"])


@dataclass(frozen=True, slots=True)
class Entry:
    """One feed item; shared with the library's collection and alert feeds."""

    paper: Paper
    when: datetime  # listing day, or publication time
    note: str = ""  # e.g. "42 upvotes" shown before the abstract


def _x(text: str) -> str:
    return _NOT_XML.sub("", text)


def _html(*paragraphs: str) -> str:
    """Untrusted text as HTML that shows exactly that text: escaped, one ``<p>`` per non-empty part."""
    return "".join(f"<p>{escape(_x(part))}</p>" for part in paragraphs if part.strip())


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def render(
    request: Request,
    kind: Kind,
    title: str,
    description: str,
    pages: tuple[str, str],
    entries: Iterable[Entry],
) -> Response:
    """Build the feed; ``pages`` = (the HTML page it mirrors, the feed's own path without /rss|/atom)."""
    page, feed = pages
    site = base_url(request)
    query = f"?{request.url.query}" if request.url.query else ""
    fg = FeedGenerator()
    fg.load_extension("dc", atom=False, rss=True)
    fg.id(f"{site}/{kind}{feed}{query}")
    fg.title(_x(title))
    # feedgen uses the *last* link as RSS's <link>: the self link goes first.
    fg.link(href=f"{site}/{kind}{feed}{query}", rel="self")
    fg.link(href=f"{site}{page}", rel="alternate")
    # RSS's channel <description> is HTML to readers; Atom's <subtitle> is plain text.
    fg.description(_html(description) if kind == "rss" else _x(description))
    fg.language("en")
    fg.generator("paperfeed", version=__version__, uri="https://github.com/paperfeed/paperfeed")
    newest: datetime | None = None
    for entry in entries:
        p = entry.paper
        link = f"{site}/papers/{p.id}"
        fe = fg.add_entry(order="append")
        fe.id(link)
        fe.guid(link, permalink=True)
        fe.title(_x(p.title))
        if ":" not in p.id:
            fe.link(href=f"https://arxiv.org/abs/{p.id}", rel="related", title="arXiv")
        fe.link(href=link, rel="alternate")  # last: RSS's <link>
        line = p.one_line  # Hugging Face's one-line summary, or the extracted one, labelled as such
        body = _html(entry.note, line.labelled if line is not None else "", p.abstract) or _html(p.title)
        if kind == "rss":
            fe.description(body)
        else:
            fe.content(body, type="html")
        if p.authors:
            fe.author([{"name": _x(name)} for name in p.authors[:50] if _x(name).strip()])
            fe.dc.dc_creator([_x(name) for name in p.authors[:50]])
        for category in p.categories:
            fe.category(term=category)
        fe.published(entry.when)
        updated = max(entry.when, p.updated or entry.when)
        fe.updated(updated)
        newest = updated if newest is None or updated > newest else newest
    fg.updated(newest or datetime.now(UTC))
    body = fg.rss_str(pretty=False) if kind == "rss" else fg.atom_str(pretty=False)
    return Response(body, media_type=_MEDIA[kind], headers={"Cache-Control": "public, max-age=300"})


def _daily(request: Request, kind: Kind, day_text: str | None) -> Response:
    feed = feeds_of(request).day(parse_day(day_text) if day_text else None)
    entries = [
        Entry(i.paper, _midnight(i.day), f"#{i.rank} on {i.day.isoformat()} · {count(i.upvotes, 'upvote')}")
        for i in feed.items
    ]
    return render(
        request,
        kind,
        f"paperfeed · daily papers {feed.day.isoformat()}",
        f"Papers on the daily feed of {feed.day.isoformat()}, most upvoted first.",
        (f"/papers/date/{feed.day.isoformat()}", "/daily"),
        entries,
    )


def _trending(request: Request, kind: Kind) -> Response:
    page = feeds_of(request).trending(FEED_SIZE)
    entries = [
        Entry(
            t.paper, t.first_seen, f"#{t.rank} trending · {count(t.upvotes, 'upvote')} · score {t.score:.3f}"
        )
        for t in page.items
    ]
    return render(
        request,
        kind,
        "paperfeed · trending papers",
        f"Trending papers: {page.formula}.",
        ("/trending", "/trending"),
        entries,
    )


def _searched(request: Request, kind: Kind, q: str) -> Response:
    text = checked_query(q)
    hits = search_of(request).search(text, limit=FEED_SIZE).hits if text else ()
    now = datetime.now(UTC)
    entries = [Entry(h.paper, h.paper.published or now) for h in hits]
    return render(
        request,
        kind,
        f"paperfeed · search: {text}",
        f"Papers matching “{text}”, best first.",
        (f"/search?{urlencode({'q': text})}", "/search"),
        entries,
    )


DayParam = Annotated[
    str | None, Query(description="Day, YYYY-MM-DD (default: the latest day with papers).", max_length=40)
]
QParam = Annotated[str, Query(description=f"Search query, at most {count(MAX_QUERY_CHARS, 'character')}.")]


@router.get("/rss/daily", summary="RSS 2.0: papers of a day", response_class=Response)
def rss_daily(request: Request, date: DayParam = None) -> Response:
    return _daily(request, "rss", date)


@router.get("/atom/daily", summary="Atom: papers of a day", response_class=Response)
def atom_daily(request: Request, date: DayParam = None) -> Response:
    return _daily(request, "atom", date)


@router.get("/rss/trending", summary="RSS 2.0: trending papers", response_class=Response)
def rss_trending(request: Request) -> Response:
    return _trending(request, "rss")


@router.get("/atom/trending", summary="Atom: trending papers", response_class=Response)
def atom_trending(request: Request) -> Response:
    return _trending(request, "atom")


@router.get("/rss/search", summary="RSS 2.0: search results", response_class=Response)
def rss_search(request: Request, q: QParam = "") -> Response:
    return _searched(request, "rss", q)


@router.get("/atom/search", summary="Atom: search results", response_class=Response)
def atom_search(request: Request, q: QParam = "") -> Response:
    return _searched(request, "atom", q)
