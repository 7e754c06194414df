"""``paperfeed harvest fill``, and the fill ``paperfeed run`` does before serving.

On a first start it fills the window (``PAPERFEED_FILL_DAYS``): the Hugging Face Daily Papers of every
day and the newest arXiv submissions of the followed categories; on later starts it fetches only what
is missing (today, yesterday, days missed while the instance was down, categories not harvested today).
The first request goes through a quick probe, so without a network it says so in one line at once.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from paperfeed.domain.wording import count

from .context import Context
from .progress import FillBars

if TYPE_CHECKING:
    from paperfeed.services.fill import FillReport

__all__ = ["OFFLINE_HINT", "fill_window", "register"]

OFFLINE_HINT = (
    "paperfeed works offline: import a file of papers with `make run DATA=papers.jsonl.gz` "
    "or `paperfeed import FILE.jsonl.gz`"
)


def fill_window(
    c: Context, *, probe_timeout: float, days: int | None = None, hint: bool = True
) -> FillReport:
    """Fill or catch up the window with progress on stderr; reports what happened, never raises for an
    unreachable or refusing source. ``hint``: say how to import a file when the sources are unreachable
    (``paperfeed run`` says it itself, once, and only when the store is empty)."""
    service = c.app.sources.fill
    if days is not None:
        service = replace(service, settings=replace(service.settings, days=days))
    with FillBars(c.err) as bars:
        report = service.fill(bars, probe_timeout=probe_timeout)
    if report.offline is not None:
        c.err.print(f"[yellow]sources unreachable[/] ({escape(report.offline)}).", highlight=False)
        if hint:
            c.err.print(OFFLINE_HINT, highlight=False, markup=False)
        return report
    hf = report.hf
    window = service.settings.days
    c.err.print(
        f"Hugging Face Daily Papers, last {count(window, 'day')}: {count(len(hf.fetched), 'day')} fetched, "
        f"{hf.complete_before} complete already; {hf.summary.added:,} new, {hf.summary.updated:,} updated",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    ax = report.arxiv
    if ax.categories:
        c.err.print(
            f"arXiv listings of {', '.join(ax.categories)} ({ax.how}): {len(ax.fetched)} harvested, "
            f"{len(ax.fresh)} already up to date today; "
            f"{ax.summary.added:,} new, {ax.summary.updated:,} updated",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    elif ax.how:
        c.err.print(f"arXiv listings: {ax.how}", highlight=False, markup=False, soft_wrap=True)
    for category, why in ax.refused:
        c.err.print(
            f"[yellow]arXiv refused[/] the listing of {escape(category)}: {escape(why)} "
            "(check PAPERFEED_ARXIV_CATEGORIES)",
            highlight=False,
            soft_wrap=True,
        )
    for why in report.stopped:
        c.err.print(
            f"[yellow]stopped early[/] ({escape(why)}); what arrived is kept and the next start "
            "(or `paperfeed harvest fill`) resumes there",
            highlight=False,
            soft_wrap=True,
        )
    return report


def register(harvest_app: typer.Typer) -> None:
    """Add ``fill`` to ``paperfeed harvest``."""

    @harvest_app.command("fill")
    def harvest_fill(
        ctx: typer.Context,
        days: Annotated[
            int | None,
            typer.Option("--days", min=1, max=365, help="Window in days (default PAPERFEED_FILL_DAYS, 30)."),
        ] = None,
        probe_timeout: Annotated[
            float, typer.Option(min=0.1, help="Seconds to wait for the first answer before going offline.")
        ] = 5.0,
    ) -> None:
        """Fill the window of recent papers, or catch up the days and categories still missing.

        Exit 0 when done, 1 when arXiv refused a category, 3 when a source could not be reached.
        """
        c: Context = ctx.obj
        report = fill_window(c, probe_timeout=probe_timeout, days=days)
        if report.offline is not None or report.stopped:
            raise typer.Exit(3)
        if report.arxiv.refused:
            raise typer.Exit(1)
