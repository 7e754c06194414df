"""``paperfeed harvest hf``: Hugging Face Daily Papers for one day or a range of days.

A range checkpoints after every day, so a killed or failed run resumes at the next day when the same
command is run again; once a range is done its checkpoint is cleared, so running it again re-harvests
it (which refreshes upvotes and changes nothing else).
"""

from __future__ import annotations

import time
from datetime import UTC, date, datetime
from typing import Annotated

import typer
from rich.markup import escape

from paperfeed.domain.errors import SourceUnavailable
from paperfeed.domain.ingest import IngestSummary
from paperfeed.domain.wording import count

from .context import Context, fail
from .progress import RichProgress, print_summary

__all__ = ["register"]

_OFFLINE_HINT = (
    "to load papers without the network, import a file instead: "
    "paperfeed import FILE.jsonl.gz (or make run DATA=FILE.jsonl.gz)"
)


def _parse_day(value: str | None, flag: str) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        raise fail(f"{flag}: not a date (expected YYYY-MM-DD): {value[:40]!r}") from None


def _days(on: str | None, since: str | None, until: str | None) -> tuple[date, date]:
    """Resolve the flags to an inclusive day range; default is today (UTC)."""
    today = datetime.now(UTC).date()
    day, start, end = _parse_day(on, "--date"), _parse_day(since, "--from"), _parse_day(until, "--until")
    if day is not None and (start is not None or end is not None):
        raise fail("use either --date or --from/--until, not both")
    if end is not None and start is None:
        raise fail("--until needs --from")
    if day is not None:
        return day, day
    if start is None:
        return today, today
    end = end or today
    if end < start:
        raise fail(f"--until {end} is before --from {start}")
    return start, end


def register(harvest_app: typer.Typer) -> None:
    """Add ``hf`` to ``paperfeed harvest``."""

    @harvest_app.command("hf")
    def harvest_hf(
        ctx: typer.Context,
        on: Annotated[
            str | None, typer.Option("--date", help="One day, YYYY-MM-DD (default: today, UTC).")
        ] = None,
        since: Annotated[str | None, typer.Option("--from", help="First day of a range, YYYY-MM-DD.")] = None,
        until: Annotated[
            str | None, typer.Option("--until", help="Last day of a range (default: today, UTC).")
        ] = None,
        keep_going: Annotated[
            bool, typer.Option("--keep-going", help="Exit 0 even when some records were rejected.")
        ] = False,
    ) -> None:
        """Harvest Hugging Face Daily Papers. A range resumes at the next day after an interruption."""
        c: Context = ctx.obj
        start, end = _days(on, since, until)
        source = c.app.sources.hf_daily(start, end)
        ingest = c.app.sources.ingest
        name = source.checkpoint_name
        done = ingest.checkpoint(name) if name else None
        first = source.resume_day(done)
        if done is not None and first > start:
            c.err.print(f"resuming {start}..{end} at {first} (days up to {done} were already harvested)")
        summary = IngestSummary()
        started = time.perf_counter()
        label = f"hf daily {start}" if start == end else f"hf daily {start}..{end}"
        try:
            with RichProgress(c.err, label, unit="days") as progress:
                progress.update((first - start).days, source.days, 0, 0, 0)
                ingest.run(source, progress, summary=summary)
        except SourceUnavailable as exc:
            kept = f"{count(summary.added, 'new paper')} kept" if summary.added else "nothing new was stored"
            resume = "; run the same command again to resume" if name else ""
            message = f"cannot reach Hugging Face Daily Papers: {exc} ({kept}{resume}); {_OFFLINE_HINT}"
            # soft_wrap: one line however narrow the terminal, so scripts and logs get it whole
            c.err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
            raise typer.Exit(3) from None
        if name:
            ingest.clear_checkpoint(name)
        for r in summary.rejects[:20]:
            c.err.print(f"  rejected {r}", highlight=False, markup=False, soft_wrap=True)
        if summary.rejected > 20:
            c.err.print(f"  … and {summary.rejected - 20:,} more")
        print_summary(c.console, "harvest hf", summary, time.perf_counter() - started)
        if summary.rejected and not keep_going:
            raise typer.Exit(1)
