"""``paperfeed run``: the one command that brings an instance up (what ``make run`` calls).

It imports any files given, checks quickly whether the live sources are reachable (and if so fetches
today's Hugging Face Daily Papers), prints what the store holds, then serves the web app. Without a
network it never hangs: the reachability check has a short timeout and no retries, and it says how to
import a file instead.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
import uvicorn
from rich.markup import escape

from paperfeed.adapters.sources.hf_daily import HfDailySource
from paperfeed.adapters.sources.http import PoliteClient, SourceUnavailable
from paperfeed.bootstrap import build_app
from paperfeed.web import create_app

from .context import Context
from .imports import import_paths

__all__ = ["register"]

OFFLINE_HINT = (
    "paperfeed works offline: import a file of papers with `make run DATA=papers.jsonl.gz` "
    "or `paperfeed import FILE.jsonl.gz`"
)


def _refresh_from_hf(c: Context, timeout: float) -> None:
    """Fetch today's Hugging Face Daily Papers if the network allows, within ``timeout`` seconds."""
    settings = c.settings
    probe = PoliteClient(user_agent=settings.user_agent(), timeout=timeout, retries=0)
    today = datetime.now(UTC).date()
    try:
        summary = c.app.ingest.run(HfDailySource(probe, settings.hf_api_url, today, today), resume=False)
    except SourceUnavailable as exc:
        c.err.print(f"[yellow]sources unreachable[/] ({escape(str(exc))}).", highlight=False)
        c.err.print(OFFLINE_HINT, highlight=False, markup=False)
    else:
        c.err.print(
            f"fetched today's Hugging Face Daily Papers: {summary.added:,} new, {summary.updated:,} updated"
        )
    finally:
        probe.close()


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run(
        ctx: typer.Context,
        files: Annotated[
            list[Path] | None, typer.Option("--import", help="Import these JSONL files first (repeatable).")
        ] = None,
        host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
        port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8000,
        offline: Annotated[bool, typer.Option("--offline", help="Do not contact any source.")] = False,
        probe_timeout: Annotated[
            float, typer.Option(help="Seconds to wait for a source before going offline.")
        ] = 5.0,
        serve: Annotated[
            bool, typer.Option("--serve/--no-serve", help="Serve the web app afterwards.")
        ] = True,
    ) -> None:
        """Bring paperfeed up: import FILES, refresh from the sources when reachable, then serve."""
        c: Context = ctx.obj
        if files:
            import_paths(c, files)
        if not offline:
            _refresh_from_hf(c, probe_timeout)
        stats = c.app.store.stats()
        c.console.print(f"{stats.papers:,} papers in {escape(stats.location)}", highlight=False)
        if stats.papers == 0:
            c.console.print(f"[yellow]the store is empty.[/] {escape(OFFLINE_HINT)}", highlight=False)
        if not serve:
            return
        settings = c.settings
        c.close()  # the server opens its own connections in its lifespan
        c.console.print(f"serving on http://{host}:{port}/  (Ctrl+C to stop)", highlight=False)
        uvicorn.run(create_app(lambda: build_app(settings)), host=host, port=port, log_level="warning")
