"""View models for the HTML pages: papers, feeds and result pages turned into what templates print.

Everything a template shows is prepared here (labels, URLs, safe HTML from :mod:`.markup`), so the
templates stay simple and the logic is testable without rendering.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from functools import lru_cache
from typing import Annotated
from urllib.parse import quote_plus, urlsplit

from fastapi import Query
from markupsafe import Markup

from paperfeed.domain.links import paper_url
from paperfeed.domain.models import Paper
from paperfeed.domain.search import Span
from paperfeed.domain.wording import count

from .markup import plain_text, render_text, snippet

__all__ = [
    "MissingView",
    "NavLink",
    "PageLink",
    "PageMeta",
    "PageNumber",
    "PaperView",
    "author_search_url",
    "clip",
    "count_label",
    "day_label",
    "long_day_label",
    "page_links",
    "paper_url",
    "paper_view",
    "plural",
    "safe_url",
]


MAX_PAGE = 10_000
# ``?page=`` of an HTML page: a bad value is a 400 naming the parameter (as in the API), not page 1.
PageNumber = Annotated[int, Query(ge=1, le=MAX_PAGE, description=f"Page number, 1 to {MAX_PAGE:,}.")]


@dataclass(frozen=True, slots=True)
class PageMeta:
    """``<title>``, description and Open Graph data of one page."""

    title: str
    description: str
    canonical: str
    og_type: str = "website"
    noindex: bool = False
    feeds: tuple[tuple[str, str], ...] = ()  # (title, RSS URL) of this page's feed, for <link rel=alternate>


@dataclass(frozen=True, slots=True)
class MissingView:
    """What ``not_found.html`` shows: an error page's heading, message and search box."""

    heading: str
    message: str
    query: str = ""
    arxiv_url: str | None = None
    status: int = 404


def clip(text: str, limit: int = 200) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters (with an ellipsis)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[: text.rfind(" ", 0, limit - 1)].rstrip(",;:") + "…"


@dataclass(frozen=True, slots=True)
class NavLink:
    url: str
    label: str
    note: str = ""  # e.g. "2 days without papers skipped"


@dataclass(frozen=True, slots=True)
class PageLink:
    number: int
    url: str | None  # None: a gap ("…") between page numbers


@dataclass(frozen=True, slots=True)
class PaperView:
    """One paper as a card or a page shows it."""

    id: str
    url: str
    title_html: Markup
    title_text: str
    authors: tuple[str, ...]
    categories: tuple[str, ...]
    upvotes: int | None
    upvotes_label: str
    num_comments: int | None
    github_url: str | None
    github_stars: int | None
    stars_label: str
    organization: str | None
    day_iso: str | None
    day_label: str | None
    abstract_html: Markup | None
    snippet_html: Markup | None = None
    score_label: str | None = None
    why: str | None = None  # similar papers: why it is listed ("cited together with it by 12 papers")
    # the one-line summary (Hugging Face's, else extracted from the abstract) and whose it is
    summary_html: Markup | None = None
    summary_source: str | None = None  # "hugging_face" or "extracted"
    summary_label: str | None = None


def safe_url(value: str | None) -> str | None:
    """An http(s) URL from untrusted metadata, or None: never ``javascript:`` or another scheme."""
    if not value:
        return None
    text = value.strip()
    try:
        parts = urlsplit(text)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc or any(c.isspace() for c in text):
        return None
    return text


@lru_cache(maxsize=8192)
def author_search_url(name: str) -> str:
    """``/search?q=author:"…"``, as ``urlencode`` spells it; every card links each of its authors, and
    the same authors come back page after page, so the answers are kept (a few hundred kB at most)."""
    return "/search?q=" + quote_plus(f'author:"{name}"', safe="")


def count_label(value: int | None) -> str:
    """1234 → ``1.2k``: compact counts for upvotes and stars (``–`` when unknown)."""
    if value is None:
        return "–"
    if value < 1000:
        return str(value)
    if value < 10_000:
        return f"{value / 1000:.1f}".rstrip("0").rstrip(".") + "k"
    if value < 1_000_000:
        return f"{value // 1000}k"
    return f"{value / 1_000_000:.1f}".rstrip("0").rstrip(".") + "M"


def plural(n: int, word: str) -> str:
    """``1 upvote``, ``2 upvotes``, ``1,234 papers``: the domain's one count-in-words helper."""
    return count(n, word)


def day_label(day: date | datetime) -> str:
    """``18 Mar 2025``."""
    return f"{day.day} {day:%b %Y}"


def long_day_label(day: date) -> str:
    """``Tuesday, 18 March 2025``."""
    return f"{day:%A}, {day.day} {day:%B %Y}"


def paper_view(
    paper: Paper,
    *,
    upvotes: int | None = None,
    title_spans: Sequence[Span] = (),
    abstract_spans: Sequence[Span] = (),
    with_abstract: bool = True,
    with_snippet: bool = False,
    score_label: str | None = None,
) -> PaperView:
    """Build the card data for ``paper``; ``upvotes`` overrides the paper's own count (listing counts)."""
    votes = upvotes if upvotes is not None else paper.upvotes
    published = paper.published.date() if paper.published else None
    snippet_html: Markup | None = None
    if with_snippet and paper.abstract:
        text, spans = snippet(paper.abstract, abstract_spans)
        snippet_html = render_text(text, spans)
    github = safe_url(paper.github_repo)
    line = paper.one_line
    return PaperView(
        id=paper.id,
        url=paper_url(paper.id),
        title_html=render_text(paper.title, title_spans),
        title_text=plain_text(paper.title),
        authors=paper.authors,
        categories=paper.categories,
        upvotes=votes,
        upvotes_label=count_label(votes),
        num_comments=paper.num_comments,
        github_url=github,
        github_stars=paper.github_stars if github else None,
        stars_label=count_label(paper.github_stars),
        organization=paper.organization,
        day_iso=published.isoformat() if published else None,
        day_label=day_label(published) if published else None,
        abstract_html=render_text(paper.abstract) if with_abstract and paper.abstract else None,
        snippet_html=snippet_html,
        score_label=score_label,
        summary_html=render_text(line.text) if line is not None else None,
        summary_source=line.source if line is not None else None,
        summary_label=line.label if line is not None else None,
    )


def page_links(current: int, last: int, url_for: Callable[[int], str]) -> list[PageLink]:
    """Numbered links around ``current`` (1-based), with the first and last page and gaps between."""
    wanted = sorted({1, last, *range(max(1, current - 2), min(last, current + 2) + 1)})
    links: list[PageLink] = []
    previous = 0
    for number in wanted:
        if number - previous > 1:
            links.append(PageLink(0, None))
        links.append(PageLink(number, url_for(number)))
        previous = number
    return links
