"""``paperfeed harvest arxiv``: incremental, resumable harvest of arXiv's OAI-PMH endpoint.

Every page commits with its resumption token, so a killed harvest run again with the same options
continues at the next page. Without ``--from`` a harvest starts at the highest datestamp the last
completed harvest (same endpoint, format and set) reached; ``--restart`` ignores all saved state.
See :mod:`paperfeed.adapters.sources.arxiv_oai` for the exact state kept.
"""

from __future__ import annotations

import re
import time
from datetime import date
from enum import StrEnum
from typing import Annotated

import typer
from rich.markup import escape

from paperfeed.domain.errors import OaiError, SourceUnavailable
from paperfeed.domain.ingest import IngestSummary
from paperfeed.domain.wording import count

from .context import Context, fail
from .progress import RichProgress, print_summary

__all__ = ["register"]

_OAI_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2}Z)?")


class MetadataFormat(StrEnum):
    arXiv = "arXiv"
    arXivRaw = "arXivRaw"
    oai_dc = "oai_dc"


def _oai_date(value: str | None, flag: str) -> str | None:
    """Check an OAI-PMH datestamp (``YYYY-MM-DD`` or ``YYYY-MM-DDThh:mm:ssZ``) before sending it."""
    if value is None:
        return None
    text = value.strip()
    try:
        if not _OAI_DATE.fullmatch(text):
            raise ValueError
        date.fromisoformat(text[:10])
    except ValueError:
        raise fail(f"{flag}: not a date (expected YYYY-MM-DD): {value[:40]!r}") from None
    return text


def _say(c: Context, message: str) -> None:
    c.err.print(f"[yellow]note:[/] {escape(message)}", highlight=False, soft_wrap=True)


def _error(c: Context, message: str, code: int) -> typer.Exit:
    # soft_wrap: one line however narrow the terminal, so scripts and logs get it whole
    c.err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def register(harvest_app: typer.Typer) -> None:
    """Add ``arxiv`` to ``paperfeed harvest``."""

    @harvest_app.command("arxiv")
    def harvest_arxiv(
        ctx: typer.Context,
        since: Annotated[
            str | None,
            typer.Option(
                "--from",
                help="Harvest records changed on or after this day, YYYY-MM-DD "
                "(default: where the last completed harvest ended).",
            ),
        ] = None,
        until: Annotated[
            str | None, typer.Option("--until", help="Harvest records changed up to this day, inclusive.")
        ] = None,
        set_spec: Annotated[
            str | None, typer.Option("--set", help="OAI set, e.g. 'cs' or 'physics:cond-mat'.")
        ] = None,
        metadata_format: Annotated[
            MetadataFormat, typer.Option("--format", help="OAI metadata format to request.")
        ] = MetadataFormat.arXiv,
        restart: Annotated[
            bool, typer.Option("--restart", help="Ignore saved progress and the saved start date.")
        ] = False,
        keep_going: Annotated[
            bool, typer.Option("--keep-going", help="Exit 0 even when some records were rejected.")
        ] = False,
    ) -> None:
        """Harvest papers from arXiv's OAI-PMH endpoint; run again to resume or to fetch what is new."""
        c: Context = ctx.obj
        start, end = _oai_date(since, "--from"), _oai_date(until, "--until")
        if start and end and end[:10] < start[:10]:
            raise fail(f"--until {end} is before --from {start}")
        endpoint = c.settings.arxiv_oai_url
        source = c.app.sources.arxiv_oai_harvest(
            metadata_prefix=metadata_format.value,
            set_spec=set_spec,
            from_date=start,
            until=end,
            restart=restart,
            notify=lambda message: _say(c, message),
        )
        if source.from_date and not start:
            _say(c, f"continuing from {source.from_date}, where the last completed harvest ended")
        summary = IngestSummary()
        started = time.perf_counter()
        try:
            with RichProgress(c.err, f"arXiv OAI-PMH {metadata_format.value}", unit="records") as progress:
                c.app.sources.ingest.run(source, progress, resume=not restart, summary=summary)
        except OaiError as exc:
            raise _error(c, f"arXiv OAI-PMH at {endpoint} refused the request: {exc}", 2) from None
        except SourceUnavailable as exc:
            kept = (
                f"; {count(summary.added, 'new paper')} kept, run the same command to resume"
                if summary.seen
                else ""
            )
            message = (
                f"arXiv OAI-PMH at {endpoint} is unreachable: {exc}{kept}; "
                "to import a file instead: paperfeed import FILE"
            )
            raise _error(c, message, 3) from None
        report = source.report
        for r in summary.rejects[:20]:
            c.err.print(f"  rejected {r}", highlight=False, markup=False, soft_wrap=True)
        if summary.rejected > 20:
            c.err.print(f"  … and {summary.rejected - 20:,} more")
        print_summary(c.console, "harvest arxiv", summary, time.perf_counter() - started)
        c.console.print(
            f"deleted (skipped): {report.deleted:,}   pages: {report.pages:,}   "
            f"next harvest starts at: {report.highwater or '-'}",
            highlight=False,
        )
        if summary.rejected and not keep_going:
            raise typer.Exit(1)
