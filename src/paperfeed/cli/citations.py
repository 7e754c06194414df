"""``paperfeed citations import FILE…``: citations in bulk into the paper graph (#33, docs/citations.md).

Each batch is saved with the file's place, so a killed import loses at most the batch in flight and the
same command resumes; a file imported before is read again and adds nothing. Exit codes: 0 done, 1 some
lines were rejected (the rest imported; ``--keep-going`` makes it 0), 2 bad usage or a file that cannot be
read at all (nothing imported).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from paperfeed.domain.wording import count

from .context import Context, fail
from .progress import RichProgress

if TYPE_CHECKING:
    from paperfeed.domain.ingest import Reject
    from paperfeed.services.citation_import import FileReport

__all__ = ["citations_app"]

citations_app = typer.Typer(
    help="Import citations in bulk: pairs of ids (TSV, CSV, JSONL), Semantic Scholar Datasets, OpenAlex "
    "works snapshots.",
    no_args_is_help=True,
)

_FORMATS = ("auto", "pairs", "s2-citations", "s2-papers", "openalex-works")
_SHOWN_REJECTS = 20


def _summary(report: FileReport) -> str:
    parts = [
        f"{report.name} ({report.format.value}): {count(report.records, 'record')} read",
        f"+{count(report.edges_added, 'citation link')}",
        f"{report.edges_merged:,} already stored that gained this file as a source",
        f"{report.edges_unchanged:,} already stored from it",
        f"+{count(report.works_added, 'work')}",
    ]
    if report.aliases or report.resolved:
        learned, moved = count(report.aliases, "alias"), count(report.resolved, "work")
        parts.append(f"{learned} learned, {moved} moved to their key")
    if report.unkeyed:
        parts.append(f"{report.unkeyed:,} without a corpus id (not stored)")
    if report.outside_store:
        parts.append(f"{report.outside_store:,} outside this instance's papers (left out)")
    parts.append(f"{count(report.self_citations, 'self-citation')} dropped")
    parts.append(f"{report.rejected:,} rejected")
    return "; ".join(parts)


def _sink(out: IO[bytes] | None, shown: list[Reject]) -> Callable[[Sequence[Reject]], None]:
    """Every reject as its batch is saved: one JSON line each to ``out``; the first few kept to show."""
    import orjson

    def take(rejects: Sequence[Reject]) -> None:
        room = max(_SHOWN_REJECTS - len(shown), 0)
        shown.extend(rejects[:room])
        shown.extend(r for r in rejects[room:] if r.fatal)  # however many came before, show the break
        if out is not None:
            out.write(
                b"".join(
                    orjson.dumps({"where": r.where, "field": r.field, "reason": r.reason}) + b"\n"
                    for r in rejects
                )
            )

    return take


@citations_app.command("import")
def import_citations(
    ctx: typer.Context,
    files: Annotated[
        list[Path],
        typer.Argument(
            help="Files of citations, gzip or plain: pairs of ids, S2 Datasets citations or papers, "
            "OpenAlex works.",
            show_default=False,
        ),
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="pairs, s2-citations, s2-papers or openalex-works; auto tells each file's format from its "
            "first record.",
        ),
    ] = "auto",
    touching_store: Annotated[
        bool,
        typer.Option(
            "--touching-store",
            help="Keep only edges with an end among this instance's papers (what a harvest keeps), and only "
            "descriptions of works those edges name or the graph holds: for dumps of a whole field.",
        ),
    ] = False,
    rejects_file: Annotated[
        Path | None,
        typer.Option("--rejects", help="Write every rejected line's place and reason here (JSONL)."),
    ] = None,
    keep_going: Annotated[
        bool, typer.Option("--keep-going", help="Exit 0 even when some lines were rejected.")
    ] = False,
    batch_size: Annotated[
        int | None,
        typer.Option("--batch-size", min=1, max=500_000, help="Records per transaction (default 20,000)."),
    ] = None,
) -> None:
    """Import citations in bulk from files (pairs of ids, Semantic Scholar Datasets, OpenAlex snapshots).
    Safe to interrupt: the same command resumes, and importing a file again adds nothing."""
    from paperfeed.domain.citation_import import ImportFormat, UnreadableCitationFile
    from paperfeed.services.citation_import import IMPORT_BATCH

    c: Context = ctx.obj
    wanted = fmt.strip().lower()
    if wanted not in _FORMATS:
        raise fail(f"--format: expected one of {', '.join(_FORMATS)}, got {fmt[:40]!r}")
    chosen = None if wanted == "auto" else ImportFormat(wanted)
    service = c.app.sources.citation_import
    opened = []
    for path in files:  # every file readable before anything is imported
        try:
            opened.append(service.open(str(path), chosen, batch_size=batch_size or IMPORT_BATCH))
        except UnreadableCitationFile as exc:
            raise fail(f"{escape(str(exc))}; nothing was imported") from None
    rejected = 0
    shown: list[Reject] = []
    with ExitStack() as stack:
        out: IO[bytes] | None = None
        if rejects_file is not None:
            try:
                out = stack.enter_context(rejects_file.open("wb"))
            except OSError as exc:
                raise fail(f"--rejects {rejects_file}: cannot write there ({exc.strerror})") from None
        sink = _sink(out, shown)
        for file in opened:
            with RichProgress(c.err, file.mark.name) as progress:
                report = service.run(file, progress, touching_store=touching_store, on_rejects=sink)
            if report.resumed_at is not None:
                c.err.print(
                    f"{escape(report.name)}: resumed an interrupted import after line {report.resumed_at:,}",
                    highlight=False,
                    soft_wrap=True,
                )
            if report.stopped:
                c.err.print(
                    f"[red]{escape(report.name)}: the file breaks off after line {report.lines:,}; what "
                    "came before is imported[/]",
                    highlight=False,
                    soft_wrap=True,
                )
            c.console.print(_summary(report), highlight=False, soft_wrap=True, markup=False)
            rejected += report.rejected
    for r in shown:
        c.err.print(f"  rejected {r}", highlight=False, markup=False, soft_wrap=True)
    if rejected > len(shown):
        c.err.print(f"  … and {rejected - len(shown):,} more (use --rejects FILE for all)", highlight=False)
    if rejected and not keep_going:
        raise typer.Exit(1)
