"""``paperfeed serve``: run the web app (pages, JSON API, feeds) under uvicorn."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from paperfeed.domain.wording import count

from .context import Context, fail

__all__ = ["register"]

_PACKAGE = Path(__file__).resolve().parent.parent


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve(
        ctx: typer.Context,
        host: Annotated[
            str | None, typer.Option(help="Interface to listen on (default: PAPERFEED_HOST or 127.0.0.1).")
        ] = None,
        port: Annotated[
            int | None,
            typer.Option(min=1, max=65535, help="Port to listen on (default: PAPERFEED_PORT or 8000)."),
        ] = None,
        workers: Annotated[
            int | None,
            typer.Option(min=1, max=64, help="Worker processes (default: PAPERFEED_WORKERS or 1)."),
        ] = None,
        reload: Annotated[
            bool, typer.Option("--reload", help="Restart when the code changes (development).")
        ] = False,
        base_url: Annotated[
            str | None,
            typer.Option(
                help="Public URL of the site (default: PAPERFEED_BASE_URL), used for links in mail and "
                "feeds; required unless PAPERFEED_DEBUG=1."
            ),
        ] = None,
        log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
        data_folder_secret: Annotated[
            bool,
            typer.Option(
                "--data-folder-secret",
                hidden=True,  # for `paperfeed run` (a laptop), which supervises serve as its web child
                help="Accept the data folder's generated secret when PAPERFEED_SECRET_KEY is not set.",
            ),
        ] = False,
        supervised: Annotated[
            bool,
            typer.Option(
                "--supervised",
                hidden=True,  # for `paperfeed run`, which has said where it serves and what to import
                help="Say only that the server is up, not where links point or how to import papers.",
            ),
        ] = False,
    ) -> None:
        """Serve the web pages, the JSON API (docs at /docs) and the RSS/Atom feeds."""
        # the server's imports are paid by the command that serves, not by every command
        import sqlite3

        import uvicorn

        from paperfeed.bootstrap import build_app
        from paperfeed.domain.errors import StoreError
        from paperfeed.public_url import UnsafeBaseUrl, check_base_url, public_url
        from paperfeed.secret_key import InsecureSecret, check_secret
        from paperfeed.web import create_app

        c: Context = ctx.obj
        settings = c.settings
        updates: dict[str, object] = {}
        if host is not None:
            updates["host"] = host
        if port is not None:
            updates["port"] = port
        if workers is not None:
            updates["workers"] = workers
        if base_url is not None:
            updates["base_url"] = base_url.rstrip("/")
        settings = settings.model_copy(update=updates)
        try:  # a guessable secret would let anyone forge CSRF tokens: refuse, unless debugging
            check_secret(settings, allow_generated=data_folder_secret)
        except InsecureSecret as exc:
            raise fail(str(exc)) from None
        try:  # mailed links are built from it alone: never from a request's (forgeable) Host header
            check_base_url(settings)
        except UnsafeBaseUrl as exc:
            raise fail(str(exc)) from None
        try:  # open and migrate the store once here, not racing in every worker
            papers = c.app.maintenance.store.open().papers
        except (StoreError, OSError) as exc:
            raise fail(f"cannot open the store at {settings.db_url}: {exc}") from None
        c.close()
        if supervised:
            c.console.print(
                f"serving {count(papers, 'paper')} (API docs at /docs)", highlight=False, markup=False
            )
        else:
            c.console.print(
                f"serving {count(papers, 'paper')} on http://{settings.host}:{settings.port}/ "
                f"(API docs at /docs; Ctrl+C to stop); links in mail point to {public_url(settings)}/",
                highlight=False,
                markup=False,
            )
        if papers == 0 and not supervised:
            c.console.print(
                f"[yellow]the store is empty:[/] import papers with `paperfeed import FILE` "
                f"({escape(settings.db_url)})",
                highlight=False,
            )
        if settings.workers == 1 and not reload:
            uvicorn.run(
                create_app(lambda: build_app(settings), serving=True),
                host=settings.host,
                port=settings.port,
                log_level=log_level,
                proxy_headers=True,
            )
            return
        # Several processes (or the reloader) import the app themselves: hand the settings over by env.
        os.environ["PAPERFEED_DATA_DIR"] = str(settings.data_dir)
        os.environ["PAPERFEED_WORKERS"] = str(settings.workers)
        starting = build_app(settings)
        try:  # the workers share one page cache: open it here so a broken folder fails the start, not a
            # worker. Copies an earlier run rendered stay: with the same code and settings they are
            # served (a restart starts warm); under other code or settings their keys are never asked.
            _ = starting.catalogue.shared_pages
        except (OSError, sqlite3.Error) as exc:
            folder = settings.data_dir / "cache" / "pages"
            raise fail(f"cannot open the shared page cache in {folder}: {exc}") from None
        finally:
            starting.close()
        if settings.database_url:
            os.environ["PAPERFEED_DATABASE_URL"] = settings.database_url
        if settings.base_url:
            os.environ["PAPERFEED_BASE_URL"] = settings.base_url
        uvicorn.run(
            "paperfeed.web.app:app_from_environment",
            factory=True,
            host=settings.host,
            port=settings.port,
            workers=None if reload else settings.workers,
            reload=reload,
            reload_dirs=[str(_PACKAGE)] if reload else None,
            log_level=log_level,
            proxy_headers=True,
        )
