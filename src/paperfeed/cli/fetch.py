"""``paperfeed fetch ID_OR_URL…``: fetch papers by arXiv id through the arXiv API and store them."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from paperfeed.domain.errors import ArxivApiError, MalformedFeed, SourceUnavailable
from paperfeed.domain.ids import InvalidPaperId, parse_arxiv_id
from paperfeed.domain.ingest import IngestSummary

from .context import Context, fail
from .progress import RichProgress, print_summary


def register(app: typer.Typer) -> None:
    @app.command("fetch")
    def fetch(
        ctx: typer.Context,
        ids: Annotated[
            list[str],
            typer.Argument(
                metavar="ID_OR_URL",
                help="arXiv ids or URLs: 2401.01234, 2401.01234v2, hep-th/9901001, https://arxiv.org/abs/…",
            ),
        ],
        keep_going: Annotated[
            bool, typer.Option("--keep-going", help="Exit 0 even when some ids were not found.")
        ] = False,
    ) -> None:
        """Fetch papers by id from the arXiv API (100 ids per request) and store them.

        Exit 1 when some ids are not on arXiv (the others are stored), 2 when an id is malformed or
        arXiv rejects the request, 3 when arXiv cannot be reached.
        """
        c: Context = ctx.obj
        wanted: list[str] = []
        for raw in ids:
            try:
                wanted.append(str(parse_arxiv_id(raw)))
            except InvalidPaperId as exc:
                raise fail(str(exc)) from None
        source = c.app.sources.arxiv_ids(tuple(wanted))
        summary = IngestSummary()
        started = time.perf_counter()
        try:
            with RichProgress(c.err, "arXiv API", unit="items") as progress:
                c.app.sources.ingest.run(source, progress, summary=summary)
        except SourceUnavailable as exc:
            raise fail(f"arXiv API unreachable: {exc}", 3) from None
        except ArxivApiError as exc:
            raise fail(f"arXiv rejected the request: {exc}") from None
        except MalformedFeed as exc:
            raise fail(str(exc), 3) from None
        for r in summary.rejects[:50]:
            c.err.print(f"  rejected {r}", highlight=False, markup=False)
        if summary.rejected > 50:
            c.err.print(f"  … and {summary.rejected - 50:,} more")
        print_summary(c.console, "fetch", summary, time.perf_counter() - started)
        if summary.rejected and not keep_going:
            raise typer.Exit(1)
