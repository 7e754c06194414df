"""``paperfeed index``: embed new and changed papers, then refresh the vector index."""

from __future__ import annotations

from typing import Annotated

import typer

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
            service = c.app.indexing
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
