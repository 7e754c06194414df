"""``paperfeed index``: embed new and changed papers, then refresh the vector index."""

from __future__ import annotations

from typing import Annotated

import typer

from paperfeed.domain.calibration import Calibration
from paperfeed.domain.errors import EmbedderUnavailable

from .context import Context, fail
from .progress import RichProgress


def register(app: typer.Typer) -> None:
    @app.command("index")
    def index(
        ctx: typer.Context,
        rebuild: Annotated[
            bool, typer.Option("--rebuild", help="Forget all stored vectors and re-embed every paper.")
        ] = False,
        batch_size: Annotated[
            int | None,
            typer.Option("--batch-size", min=1, max=10_000, help="Papers per committed batch."),
        ] = None,
        limit: Annotated[
            int | None, typer.Option("--limit", min=0, help="Embed at most this many papers this run.")
        ] = None,
        calibrate: Annotated[
            bool,
            typer.Option(
                "--calibrate",
                help="Time torch, onnx and onnx-int8 on this machine first, record the fastest whose "
                "vectors agree with torch (cosine >= 0.99) for PAPERFEED_EMBEDDING_BACKEND=auto.",
            ),
        ] = False,
        keyword: Annotated[
            bool,
            typer.Option("--keyword", help="Only rebuild the keyword index from the store (no embedding)."),
        ] = False,
    ) -> None:
        """Embed papers whose vector is missing or stale. Safe to interrupt: a re-run resumes."""
        c: Context = ctx.obj
        if keyword:
            words = c.app.keyword_index
            words.rebuild()
            size = len(words)  # type: ignore[arg-type]
            c.console.print(f"keyword index rebuilt: {size:,} papers ({words.name})", highlight=False)
            return
        try:
            if calibrate:
                _print_calibration(c, c.app.backend_chooser.calibrate(), "measured now")
                if c.app.settings.embedding_backend != "auto":
                    c.console.print(
                        f"PAPERFEED_EMBEDDING_BACKEND={c.app.settings.embedding_backend} is set and wins "
                        "over the calibration (set it to auto to use it)",
                        highlight=False,
                    )
            service = c.app.indexing
            choice = c.app.embedding_choice
            if choice is not None:
                if choice.calibration is not None and not calibrate and choice.reason != "calibration record":
                    _print_calibration(c, choice.calibration, choice.reason)
                config = c.app.embedder_config(choice.backend)
                c.console.print(
                    f"embedding backend: {choice.backend} ({choice.reason}), {config.threads} threads",
                    highlight=False,
                )
            plan = service.plan(rebuild=rebuild)
            c.console.print(plan.message(), highlight=False)
            if limit is not None and limit < plan.backlog:
                c.console.print(f"this run embeds at most {limit:,} of them", highlight=False)
            with RichProgress(c.err, "embedding", unit="items") as progress:
                summary = service.run(progress, rebuild=rebuild, limit=limit, batch_size=batch_size)
        except EmbedderUnavailable as exc:
            raise fail(str(exc)) from None
        if summary.embedded:
            c.console.print(
                f"embedded {summary.embedded:,} papers ({summary.added:,} new, {summary.replaced:,} "
                f"re-embedded) in {summary.seconds:,.1f} s ({summary.rate:,.1f} papers/s)",
                highlight=False,
            )
        if summary.remaining:
            c.console.print(f"{summary.remaining:,} papers still to embed: run paperfeed index again")
        if summary.index is not None:
            c.console.print(
                f"vector index: {summary.index.size:,} vectors ({summary.index.mode} update, "
                f"{summary.index.upserted:,} written)",
                highlight=False,
            )
        else:
            c.console.print("no vector index is configured: vectors are stored in the database only")


def _print_calibration(c: Context, calibration: Calibration, how: str) -> None:
    c.console.print(
        f"embedding backends on {calibration.cpu}, {calibration.threads} threads, "
        f"{calibration.timings[0].texts if calibration.timings else 0} {calibration.probe_source} ({how}):",
        highlight=False,
        markup=False,
    )
    for line in calibration.table():
        c.console.print("  " + line, highlight=False, markup=False)
    c.console.print(
        f"chosen: {calibration.backend} (vectors: {calibration.model_id}); recorded for later runs",
        highlight=False,
    )
