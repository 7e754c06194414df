"""``paperfeed harvest citations``: references and citations of the store's papers from Semantic Scholar
and OpenAlex (issue #16, ``docs/citations.md``).

Each batch is saved with a checkpoint, so a killed run loses at most the batch in flight; running the same
command again skips the papers already saved and goes on. Exit codes: 0 done, 2 bad usage (an id that is
not a paper of this instance), 3 a source could not be reached or answered something unusable (what was
saved before stays saved).
"""

from __future__ import annotations

from datetime import date
from typing import Annotated

import typer
from rich.markup import escape

from paperfeed.domain.wording import count

from .context import Context, fail
from .progress import RichProgress

__all__ = ["register"]

_NAMES = {"s2": "Semantic Scholar", "openalex": "OpenAlex"}


def register(harvest_app: typer.Typer) -> None:
    """Add ``citations`` to ``paperfeed harvest``."""

    @harvest_app.command("citations")
    def harvest_citations(
        ctx: typer.Context,
        ids: Annotated[list[str] | None, typer.Argument(help="arXiv ids of papers of this instance.")] = None,
        since: Annotated[
            str | None, typer.Option("--since", help="Papers published on or after this day, YYYY-MM-DD.")
        ] = None,
        source: Annotated[
            str, typer.Option("--source", help="s2 (Semantic Scholar), openalex, or all (both, in turn).")
        ] = "all",
        refresh: Annotated[
            bool,
            typer.Option(
                "--refresh",
                help="Re-ask papers harvested over PAPERFEED_CITATIONS_REFRESH_AFTER_DAYS ago (their "
                "cited-by lists grow); alone: the papers published in the last "
                "PAPERFEED_CITATIONS_REFRESH_DAYS.",
            ),
        ] = False,
    ) -> None:
        """Harvest references and citations (batched, checkpointed: a rerun resumes)."""
        from paperfeed.services.citations import UnknownPapers

        c: Context = ctx.obj
        given = [i for i in ids or [] if i.strip()]
        if given and since:
            raise fail("give either paper ids or --since, not both")
        if not given and since is None and not refresh:
            raise fail("say which papers: arXiv ids, --since YYYY-MM-DD, or --refresh")
        day: date | None = None
        if since is not None:
            try:
                day = date.fromisoformat(since.strip())
            except ValueError:
                raise fail(f"--since: not a date (expected YYYY-MM-DD): {since[:40]!r}") from None
        wanted = source.strip().lower()
        if wanted not in ("s2", "openalex", "all"):
            raise fail(f"--source: expected s2, openalex or all, got {source[:40]!r}")
        names = ["s2", "openalex"] if wanted == "all" else [wanted]

        harvest = c.app.sources.citation_harvest
        try:
            candidates = harvest.candidates(given, since=day, refresh=refresh)
        except UnknownPapers as exc:
            raise fail(f"{exc}; nothing was harvested") from None
        failed = False
        for name in names:
            label = _NAMES[name]
            plan = harvest.plan(name, candidates, refresh=refresh)
            c.err.print(
                f"{label}: {count(len(plan.due), 'paper')} to ask, "
                f"{plan.skipped:,} harvested recently (skipped)",
                highlight=False,
            )
            with RichProgress(c.err, label, unit="papers") as progress:
                report = harvest.run(plan, progress)
            if report.resumed:
                c.err.print(f"{label}: resumed an interrupted harvest (its saved batches were skipped)")
            if report.error is not None:
                failed = True
                if report.offline:
                    message = f"cannot reach {label}: {report.error}; nothing was changed"
                else:
                    what = "cannot reach" if report.unreachable else "unusable answer from"
                    message = (
                        f"{what} {label}: {report.error} ({count(report.papers, 'paper')} saved before it; "
                        "run the same command again to resume)"
                    )
                c.err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
            c.console.print(
                f"{label}: {count(report.papers, 'paper')} asked ({report.unknown:,} unknown to it), "
                f"+{count(report.edges_added, 'citation link')}, +{count(report.works_added, 'work')}; "
                f"{report.unkeyed:,} list entries without a usable id (not stored); "
                f"{count(report.cut, 'cited-by list')} cut at the limit",
                highlight=False,
                soft_wrap=True,
            )
        if failed:
            raise typer.Exit(3)
