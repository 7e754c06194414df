"""The ASGI application factory. Resources come from the composition root through lifespan state."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.routing import Route

from paperfeed import __version__
from paperfeed.bootstrap import App, build_app
from paperfeed.mcp.endpoint import LazyHttpEndpoint

from . import (
    account_data,
    admin,
    api,
    auth,
    community,
    docs,
    errors,
    evidence,
    feeds,
    graph_api,
    groups,
    library,
    library_api,
    library_export,
    mutes,
    pages_feed,
    pages_paper,
    pages_search,
    recommend,
    rising,
    security,
    subscriptions,
    topic_map,
    topics,
    uploads,
)
from .access_log import SecretRedactor
from .access_log import install as install_access_log_redaction
from .body_limits import BodyLimitMiddleware
from .comment_markup import CommentRenderer
from .forms import MAX_FIELDS, MAX_FILES, MAX_PART_BYTES
from .headers import HeadMiddleware, ResponseHeadersMiddleware
from .public_cache import PublicCacheMiddleware
from .rendering import Renderer
from .timing import ServerTimingMiddleware

__all__ = ["app_from_environment", "create_app"]


def create_app(
    build: Callable[[], App], *, comment_renderer: CommentRenderer | None = None, serving: bool = False
) -> FastAPI:
    """Create the web app; ``build`` makes the :class:`~paperfeed.bootstrap.App` at startup.

    Taking a factory (not an App) keeps import-time side effects out and lets each worker process
    open its own store connections. ``comment_renderer`` is the process's comment render cache (the
    presentation's own state, so the web surface makes it; a test may hand in one that counts).
    ``serving``: this process is the server (``paperfeed serve``), so its start-up heap may be frozen
    (:func:`freeze_start_up_heap`); an app made inside a test process leaves the collector alone.
    """

    mcp = LazyHttpEndpoint(errors.error_response)  # MCP over streamable HTTP at /mcp (docs/mcp.md)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[dict[str, App]]:
        container = build()
        try:
            container.indexes.open_local_keyword_index()  # SQLite: a missing index is built before serving
            container.indexes.start_follower()  # PostgreSQL with node-local indexes: build, then follow
            if serving:  # the embedding model loads now, in the background, not on a reader's first search
                container.indexes.warm_up()
            if serving and container.settings.web_gc_freeze:
                freeze_start_up_heap(container, renderer)
            async with mcp.running():
                yield {"app": container}
        finally:
            container.close()

    web = FastAPI(
        title="paperfeed",
        version=__version__,
        description="Research-paper discovery: daily feeds, hybrid search, similar papers. "
        "The JSON API follows the shape of Hugging Face's papers API.",
        lifespan=lifespan,
        docs_url=None,  # docs.install serves /docs from packaged assets, not a CDN
        redoc_url=None,
        # Form/File parameters are parsed under the site's limits, not Starlette's 1,000 files and fields.
        form_limits={"max_files": MAX_FILES, "max_fields": MAX_FIELDS, "max_part_size": MAX_PART_BYTES},
    )
    web.state.comment_html = comment_renderer if comment_renderer is not None else CommentRenderer()
    renderer = Renderer()  # the Jinja environment and static assets every HTML page renders through
    web.state.renderer = renderer
    errors.install(web)
    security.install(web, renderer)
    web.add_middleware(BodyLimitMiddleware)  # outside the routes: bodies are bounded before any is parsed
    renderer.add_globals(library.TEMPLATE_GLOBALS, library.TEMPLATE_FILTERS)
    renderer.add_globals(community.TEMPLATE_GLOBALS)
    web.add_middleware(security.SearchRateLimitMiddleware)  # inside the cache: a cached search is free
    renderer.add_globals(groups.TEMPLATE_GLOBALS)
    web.add_middleware(PublicCacheMiddleware)  # outside security's cookie, inside the shared headers
    web.add_middleware(security.BearerTokenMiddleware)  # a bad token is a 401 before the cache answers
    web.add_middleware(ServerTimingMiddleware)
    web.add_middleware(ResponseHeadersMiddleware)
    web.add_middleware(HeadMiddleware)  # outermost: every layer inside sees HEAD as the GET it is
    docs.install(web, renderer.assets)
    web.mount("/static", renderer.assets.files(), name="static")
    web.router.routes.append(Route("/mcp", mcp, name="mcp"))  # an ASGI app: every method, as MCP wants
    # Order matters: /papers/{id}.md (api) must match before the HTML page's /papers/{id:path}.
    web.include_router(auth.api_router)
    web.include_router(account_data.api_router)
    web.include_router(recommend.api_router)
    community.install(web)  # its /api/papers/{id}/… and /papers/{id}/… routes precede the catch-alls
    web.include_router(graph_api.router)  # /api/papers/{id}/references… before api's /api/papers/{id}
    web.include_router(library_export.router)  # before api.router: /api/papers/search/export
    web.include_router(rising.api_router)  # /api/topics/rising before topics' /api/topics/{id}
    web.include_router(topics.api_router)
    web.include_router(topic_map.api_router)
    web.include_router(evidence.api_router)
    web.include_router(api.router)
    web.include_router(auth.router)
    web.include_router(account_data.router)
    web.include_router(recommend.router)
    web.include_router(subscriptions.router)
    web.include_router(admin.router)
    web.include_router(uploads.router)
    web.include_router(library_api.router)
    web.include_router(library.router)
    web.include_router(groups.api_router)
    web.include_router(groups.router)
    web.include_router(mutes.api_router)
    web.include_router(mutes.router)
    web.include_router(feeds.router)
    # The HTML pages last: /papers/date|week|month/… (feeds) before the paper page's /papers/{id:path}.
    web.include_router(pages_feed.router)
    web.include_router(pages_search.router)
    web.include_router(topics.router)
    web.include_router(topic_map.router)
    web.include_router(pages_paper.router)
    web.state.secret_redactor = SecretRedactor(web.routes)  # secrets out of the logs (access_log.py)
    install_access_log_redaction(web.state.secret_redactor)
    return web


def freeze_start_up_heap(container: App, renderer: Renderer) -> None:
    """Load what every first request would (the store and its SQL library, the compiled templates), then
    move the whole start-up heap out of the garbage collector's reach (``gc.freeze``).

    A fresh server's first full collection walked ~218k long-lived objects -- modules, compiled templates,
    SQLAlchemy's metadata -- for ~160 ms, and landed on one unlucky early request (issue #30, item 15).
    Frozen objects are never traversed again; the import does the same for its own run
    (services/ingest.py). bench/first_requests.py measures the first 100 requests with and without.
    """
    container.catalogue.feeds.data_version()  # opens the store: the engine, its dialect, the schema's tables
    for name in renderer.env.list_templates(extensions=["html"]):
        renderer.env.get_template(name)
    gc.collect()
    gc.freeze()


def app_from_environment() -> FastAPI:
    """Factory for ``uvicorn --factory`` (several workers, --reload): settings from ``PAPERFEED_*``.

    Refuses to start (one line on stderr, exit code 2) without a usable secret key or without
    ``PAPERFEED_BASE_URL`` (where mailed links point) outside debug mode.
    """
    import sys

    from paperfeed.public_url import UnsafeBaseUrl, check_base_url
    from paperfeed.secret_key import InsecureSecret, check_secret
    from paperfeed.settings import Settings

    settings = Settings()
    try:
        check_secret(settings)
        check_base_url(settings)
    except (InsecureSecret, UnsafeBaseUrl) as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise SystemExit(2) from None
    return create_app(lambda: build_app(settings), serving=True)
