"""The one place HTML pages are rendered: the Jinja environment, the static assets, :func:`page`.

:func:`create_app <paperfeed.web.app.create_app>` builds one :class:`Renderer` per app (kept in
``app.state.renderer``) and registers the template globals of the areas that need them (security,
library, community); nothing here runs at import time. Static files are hashed on first use, so their
URLs change when they do and can be cached for a year.

Every HTML page — feeds, search, paper, account, library, community, digest, admin and error pages —
goes through :func:`page`: the template gets ``page`` (its :class:`~.views.PageMeta`) and ``nav`` (the
active menu item), and the response carries the site's baseline headers (CSP included, from
:mod:`.headers`) and, when asked, a ``Cache-Control``.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterator, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.types import Scope

from paperfeed import __version__
from paperfeed.domain.digest import timezone_names
from paperfeed.domain.wording import agree, count

from .headers import KEEP_SECONDS_HEADER, PUBLIC_SECONDS_HEADER, baseline_headers
from .markup import code_spans, plain_text, render_text
from .views import MissingView, PageMeta, PaperView, author_search_url

__all__ = [
    "NO_STORE",
    "SITE_NAME",
    "WAITING_HEADERS",
    "Renderer",
    "StaticAssets",
    "absolute_url",
    "error_page",
    "page",
    "page_paper_ids",
    "renderer_of",
    "search_notes_headers",
]

SITE_NAME = "paperfeed"
NO_STORE = "no-store"  # forms carry CSRF tokens, some pages one-time link tokens or a reader's own data
# A search answer with notes (meaning search unavailable, the index still filling) changes when the index
# does, which no write announces. A signed-in reader's answer stays private; an anonymous one may be
# shared for PARTIAL_SEARCH_SECONDS only: the page cache reads the internal PUBLIC_SECONDS header, makes
# the answer ``public, max-age=5`` and drops the header (.headers drops it from every other answer). While
# an import runs every search has such a note, and rendering each anew cost most of the server's CPU.
PARTIAL_SEARCH = "private, no-store"
PARTIAL_SEARCH_SECONDS = 5
PARTIAL_SEARCH_HEADERS = {"Cache-Control": PARTIAL_SEARCH, PUBLIC_SECONDS_HEADER: str(PARTIAL_SEARCH_SECONDS)}
# An answer whose only note is meaning search's coverage ("covers N of M papers": the embedding backlog
# after every import) is a normal answer: shared like any search, but kept by the page cache a minute at
# most, so the count and the semantic matches follow the indexer. Kept 5 s, every search was rendered
# anew every 5 s while a backlog lasted (hours after a large import).
COVERAGE_KEEP_SECONDS = 60
COVERAGE_SEARCH_HEADERS = {KEEP_SECONDS_HEADER: str(COVERAGE_KEEP_SECONDS)}
# A page someone is waiting to see change (/topics and /map before the first build: "the indexer builds
# them, N papers still to embed") is kept seconds by a browser or proxy, not the pages' minutes, so it
# follows along (the server's own copy goes at once when a build lands: the data version's derived part).
WAITING_SECONDS = 10
WAITING_HEADERS = {PUBLIC_SECONDS_HEADER: str(WAITING_SECONDS)}


def search_notes_headers(failed: bool, coverage: str | None) -> dict[str, str] | None:
    """How long a search answer with notes may be kept: ``failed`` (a part of search failed) 5 s, the
    coverage note alone a minute, no note as any answer (None). The search page and the API share it."""
    if failed:
        return PARTIAL_SEARCH_HEADERS
    return COVERAGE_SEARCH_HEADERS if coverage else None


_HERE = Path(__file__).resolve().parent
STATIC_DIR = _HERE / "static"
TEMPLATES_DIR = _HERE / "templates"


class StaticAssets:
    """Content hashes of the static files (read on first use), for URLs that change when a file does."""

    def __init__(self, directory: Path = STATIC_DIR) -> None:
        self.directory = directory

    @cached_property
    def versions(self) -> dict[str, str]:
        return {
            path.name: hashlib.blake2b(path.read_bytes(), digest_size=5).hexdigest()
            for path in self.directory.iterdir()
            if path.is_file()
        }

    def url(self, name: str) -> str:
        """``/static/<name>?v=<hash>``: safe to cache for a year."""
        return f"/static/{name}?v={self.versions[name]}"

    def files(self) -> StaticFiles:
        """The ``/static`` mount: cached for a year when asked for by the current hash, else revalidated."""
        return _VersionedStaticFiles(self, directory=self.directory)


class _VersionedStaticFiles(StaticFiles):
    def __init__(self, assets: StaticAssets, *, directory: Path) -> None:
        super().__init__(directory=directory)
        self.assets = assets

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        version = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("v", [""])[0]
        fresh = response.status_code == 200 and version and version == self.assets.versions.get(path)
        response.headers["Cache-Control"] = "public, max-age=31536000, immutable" if fresh else "no-cache"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response


class Renderer:
    """The app's Jinja environment and static assets; areas add their template globals at startup."""

    def __init__(self, assets: StaticAssets | None = None) -> None:
        self.assets = assets or StaticAssets()
        env = Environment(
            loader=FileSystemLoader(TEMPLATES_DIR),
            autoescape=True,
            undefined=StrictUndefined,
            trim_blocks=False,
            lstrip_blocks=False,
        )
        env.globals.update(
            site_name=SITE_NAME,
            version=__version__,
            static_url=self.assets.url,
            author_search_url=author_search_url,
            time_zones=timezone_names,  # every IANA zone, for the time zone lists (_zones.html)
        )
        # counts in words, one helper for every message (domain/wording.py): {{ n|count("paper") }}
        env.filters.update(rich=render_text, plain=plain_text, code=code_spans, count=count, agree=agree)
        self.env = env
        self.templates = Jinja2Templates(env=env)

    def add_globals(
        self, values: Mapping[str, Any], filters: Mapping[str, Callable[..., Any]] | None = None
    ) -> None:
        """Register an area's template globals (and filters); names must not clash."""
        clash = (set(values) & set(self.env.globals)) | (set(filters or {}) & set(self.env.filters))
        if clash:
            raise ValueError(f"template names registered twice: {', '.join(sorted(clash))}")
        self.env.globals.update(values)
        self.env.filters.update(filters or {})


def renderer_of(request: Request) -> Renderer:
    """The renderer :func:`~paperfeed.web.app.create_app` made for this request's app."""
    renderer: Renderer = request.app.state.renderer
    return renderer


def absolute_url(request: Request, path: str | None = None) -> str:
    """``path`` (default: the request's own path, without the query) on this site, for canonical links."""
    return str(request.base_url).rstrip("/") + (request.url.path if path is None else path)


PAGE_PAPERS = "pf_page_papers"  # request-state key: the ids of the papers the page being rendered shows


def _papers_in(value: Any, depth: int = 0) -> Iterator[str]:
    """The ids of the :class:`PaperView` cards in a template value: itself, or inside the lists, tuples
    and dataclasses (a feed, a search, a recommendation) a page passes, at most four levels down."""
    if isinstance(value, PaperView):
        yield value.id
    elif depth >= 4 or isinstance(value, str | bytes):
        return
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _papers_in(item, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _papers_in(getattr(value, f.name), depth + 1)


def page_paper_ids(request: Request) -> list[str]:
    """The papers the page being rendered shows as cards (from its context, noted by :func:`page`): a
    template global that needs the reader's state of each card (their votes) asks for all of them at once,
    one query a page instead of one a card."""
    ids: list[str] = request.scope.get("state", {}).get(PAGE_PAPERS, [])
    return ids


def page(
    request: Request,
    template: str,
    meta: PageMeta | str,
    *,
    nav: str = "",
    status: int = 200,
    cache: str | None = None,
    headers: Mapping[str, str] | None = None,
    **context: Any,
) -> HTMLResponse:
    """Render one HTML page of the site.

    ``meta`` is the page's :class:`PageMeta`, or just its title for a page search engines should skip
    (forms, accounts, error pages): then title and description are the title and the canonical URL is
    the request's path. ``cache`` sets ``Cache-Control``; ``headers`` win over everything.
    """
    if isinstance(meta, str):
        meta = PageMeta(meta, meta, absolute_url(request), noindex=True)
    papers = dict.fromkeys(pid for value in context.values() for pid in _papers_in(value))
    request.scope.setdefault("state", {})[PAGE_PAPERS] = list(papers)
    response = renderer_of(request).templates.TemplateResponse(
        request,
        template,
        {"page": meta, "nav": nav, **context},
        status_code=status,
        headers=baseline_headers(html=True),
    )
    if cache is not None:
        response.headers["Cache-Control"] = cache
    response.headers.update(headers or {})
    return response


def error_page(
    request: Request,
    status: int,
    heading: str,
    message: str,
    *,
    query: str = "",
    arxiv_url: str | None = None,
    headers: Mapping[str, str] | None = None,
    **context: Any,
) -> HTMLResponse:
    """A styled error page with a search box, in the site's layout (for handlers and error replies);
    ``context`` may override a template global (the 5xx pages of :mod:`.errors` draw an anonymous header)."""
    missing = MissingView(heading, message, query, arxiv_url, status)
    meta = PageMeta(heading, message, absolute_url(request), noindex=True)
    return page(request, "not_found.html", meta, status=status, headers=headers, missing=missing, **context)
