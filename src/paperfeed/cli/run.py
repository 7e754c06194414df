"""``paperfeed run``: the one command that brings an instance up (what ``make run`` calls).

It imports any files given, checks quickly whether the live sources are reachable (and if so fills the
window of recent papers on a first start, or catches up what is missing: :mod:`.fill`), prints what the
store holds, then serves the web app. Without a
network it never hangs: the reachability check has a short timeout and no retries, and it says how to
import a file instead. It needs no configuration: without ``PAPERFEED_SECRET_KEY`` it uses the data
folder's generated secret, and without ``PAPERFEED_BASE_URL`` links in mail point to the address it
serves on (it says which), never to a request's Host header.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from .context import Context, fail
from .fill import fill_window
from .imports import import_paths

if TYPE_CHECKING:
    from paperfeed.settings import Settings

__all__ = ["register"]

OFFLINE_HINT = (
    "paperfeed works offline: import a file of papers with `make run DATA=papers.jsonl.gz` "
    "or `paperfeed import FILE.jsonl.gz`"
)


class BackgroundIndexer:
    """Runs ``paperfeed index`` in rounds in a low-priority child process while the server runs.

    Each round embeds a slice of the backlog and saves the vector index, so semantic search improves
    while the server is up; the job is resumable, so stopping it at any moment loses nothing.
    """

    def __init__(self, settings: Settings, round_size: int = 2000) -> None:
        self._args = [sys.executable, "-m", "paperfeed", "--data-dir", str(settings.data_dir)]
        if settings.database_url:
            self._args += ["--database-url", settings.database_url]
        self._args += ["index", "--limit", str(round_size)]
        self._stop = threading.Event()
        self._child: subprocess.Popen[bytes] | None = None
        self._thread = threading.Thread(target=self._loop, name="paperfeed-indexer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._child = subprocess.Popen(
                self._args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, preexec_fn=lambda: os.nice(10)
            )
            out, _ = self._child.communicate()
            if self._child.returncode != 0 or b"still to embed" not in out:
                return  # done, or failing (``paperfeed index`` itself says why when run by hand)

    def stop(self) -> None:
        self._stop.set()
        child = self._child
        if child is not None and child.poll() is None:
            child.terminate()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()


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
        index: Annotated[
            bool, typer.Option("--index/--no-index", help="Embed papers in the background while serving.")
        ] = True,
    ) -> None:
        """Bring paperfeed up: import FILES, refresh from the sources when reachable, then serve."""
        from paperfeed.public_url import UnsafeBaseUrl, check_base_url, local_base_url
        from paperfeed.secret_key import SECRET_FILE, InsecureSecret, check_secret, configured_secret

        c: Context = ctx.obj
        try:  # a laptop needs no configured secret: one is generated in the data folder on first use
            check_secret(c.settings, allow_generated=True)
        except InsecureSecret as exc:
            raise fail(str(exc)) from None
        # Mailed links point to PAPERFEED_BASE_URL, else to the address served on here (never a Host header).
        own_url = not (c.settings.base_url or "").strip()
        serving = c.settings
        if own_url:
            serving = serving.model_copy(update={"base_url": local_base_url(host, port)})
        try:
            check_base_url(serving)
        except UnsafeBaseUrl as exc:
            raise fail(str(exc)) from None
        if files:
            import_paths(c, files)
        if not offline:
            fill_window(c, probe_timeout=probe_timeout, offline_hint=OFFLINE_HINT)
        stats = c.app.store.stats()
        c.console.print(f"{stats.papers:,} papers in {escape(stats.location)}", highlight=False)
        if stats.papers == 0:
            c.console.print(f"[yellow]the store is empty.[/] {escape(OFFLINE_HINT)}", highlight=False)
        if not serve:
            return
        settings = serving
        c.close()  # the server opens its own connections in its lifespan
        indexer = BackgroundIndexer(settings) if index and stats.papers else None
        if indexer is not None:
            indexer.start()
            c.console.print("embedding papers in the background for semantic search (paperfeed index)")
        if configured_secret(settings) is None and not settings.debug:
            c.console.print(
                f"using the secret key in {settings.data_dir / SECRET_FILE} (generated on first run); "
                "set PAPERFEED_SECRET_KEY on a public server",
                highlight=False,
                markup=False,
            )
        c.console.print(f"serving on http://{host}:{port}/  (Ctrl+C to stop)", highlight=False)
        base = (settings.base_url or "").rstrip("/")
        c.console.print(
            f"links in mail point to {base}/"
            + (" (set PAPERFEED_BASE_URL to the address others use to reach this server)" if own_url else ""),
            highlight=False,
            markup=False,
        )

        import uvicorn  # the server's imports are paid by the command that serves, not by every command

        from paperfeed.bootstrap import build_app
        from paperfeed.web import create_app

        try:
            uvicorn.run(create_app(lambda: build_app(settings)), host=host, port=port, log_level="warning")
        finally:
            if indexer is not None:
                indexer.stop()
