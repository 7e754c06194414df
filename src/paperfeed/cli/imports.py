"""``paperfeed import FILE…``: JSONL (ours or the arXiv snapshot) or BibTeX, gzip or plain, or folders.

A folder stands for the files directly in it (not its subfolders) whose names end in one of
:data:`PAPER_FILES`, in name order; a folder with none of them is an error that says so."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Annotated

import orjson
import typer
from rich.markup import escape

from paperfeed.domain.ingest import IngestSummary, Reject
from paperfeed.domain.wording import count

from .context import Context, fail
from .progress import RichProgress, print_summary

PARALLEL_MIN_BYTES = 4 * 2**20
PAPER_FILES = (".jsonl", ".jsonl.gz", ".json", ".json.gz", ".bib", ".bib.gz")


def paper_files(paths: Sequence[Path]) -> list[Path]:
    """``paths`` with each folder replaced by the papers files directly in it; a usage error (exit 2)
    for a path that does not exist, is neither file nor folder, or is a folder without such files."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            inside = sorted(
                p
                for p in path.iterdir()
                if p.is_file() and not p.name.startswith(".") and p.name.lower().endswith(PAPER_FILES)
            )
            if not inside:
                raise fail(
                    f"{path} is a folder without files of papers in it (looked for "
                    f"{', '.join('*' + s for s in PAPER_FILES)}; subfolders are not searched)"
                )
            found.extend(inside)
        elif path.is_file():
            found.append(path)
        elif path.exists():
            raise fail(f"{path}: not a file or a folder")
        else:
            raise fail(f"{path}: no such file or folder")
    return found


def _is_bibtex(path: Path) -> bool:
    return path.name.lower().endswith((".bib", ".bib.gz"))


def import_paths(
    c: Context,
    files: list[Path],
    *,
    namespace: str | None = None,
    rejects_file: Path | None = None,
    batch_size: int | None = None,
) -> IngestSummary:
    """Import ``files`` (folders stand for the papers files in them) with a progress bar per file; print
    rejects and the summary table."""
    files = paper_files(files)
    if len(files) > 1:
        c.err.print(f"importing {count(len(files), 'file')}", highlight=False, markup=False)
    service = c.app.sources.ingest
    started = time.perf_counter()
    size = batch_size or c.settings.batch_size
    with ExitStack() as stack:
        out: IO[bytes] | None = None
        if rejects_file:
            try:
                out = stack.enter_context(rejects_file.open("wb"))
            except OSError as exc:
                raise fail(f"--rejects {rejects_file}: cannot write there ({exc.strerror})") from None
        fatal: list[Reject] = []
        summary = IngestSummary(on_rejects=_sink(out, fatal))
        for path in files:
            before = summary.rejected
            source = c.app.sources.paper_file(path, batch_size=size, namespace=namespace)
            # a worker process pays off only past a few MB (starting one costs about half a second);
            # a BibTeX file is parsed whole, by this process
            big = path.stat().st_size > PARALLEL_MIN_BYTES and not _is_bibtex(path)
            workers = c.settings.import_workers if big else 0
            with RichProgress(c.err, path.name) as progress:
                service.run(source, progress, summary=summary, workers=workers)
            if summary.rejected > before:
                c.err.print(
                    f"[yellow]{path}: {count(summary.rejected - before, 'record')} rejected[/]",
                    soft_wrap=True,
                )
            for r in fatal:  # however many rejects came before it, the reader must see this one
                # soft_wrap: a path is never broken across lines (it must stay copyable)
                c.err.print(f"[red]{escape(r.where)}: {escape(r.reason)}[/]", highlight=False, soft_wrap=True)
            fatal.clear()
    for r in summary.rejects[:20]:
        c.err.print(f"  rejected {r}", highlight=False, markup=False, soft_wrap=True)
    if summary.rejected > 20:
        c.err.print(f"  … and {summary.rejected - 20:,} more (use --rejects FILE for all)")
    print_summary(c.console, "import", summary, time.perf_counter() - started)
    return summary


def _sink(out: IO[bytes] | None, fatal: list[Reject]) -> Callable[[Sequence[Reject]], None]:
    """Every reject, as its batch is stored: one JSON line each to ``out``; fatal ones kept for the
    console (the summary keeps only the first 1,000 and the console shows 20)."""

    def take(rejects: Sequence[Reject]) -> None:
        fatal.extend(r for r in rejects if r.fatal)
        if out is not None:
            out.write(
                b"".join(
                    orjson.dumps({"where": r.where, "field": r.field, "reason": r.reason}) + b"\n"
                    for r in rejects
                )
            )

    return take


def register(app: typer.Typer) -> None:
    @app.command("import")
    def import_files(
        ctx: typer.Context,
        files: Annotated[
            list[Path],
            typer.Argument(
                help="Files of papers: JSONL (.jsonl, .jsonl.gz; ours or arXiv's .json snapshot) or BibTeX "
                "(.bib), or folders: the files with those endings directly in them.",
            ),
        ],
        keep_going: Annotated[
            bool,
            typer.Option(
                "--keep-going",
                help="Exit 0 even when some records were rejected (not when a file could not be read to its "
                "end, e.g. a truncated gzip).",
            ),
        ] = False,
        id_namespace: Annotated[
            str | None,
            typer.Option("--id-namespace", help="Prefix for ids that are not arXiv ids, e.g. 'scifact'."),
        ] = None,
        rejects_file: Annotated[
            Path | None,
            typer.Option("--rejects", help="Write every rejected record's location and reason here (JSONL)."),
        ] = None,
        batch_size: Annotated[int | None, typer.Option("--batch-size", min=1, max=50_000)] = None,
    ) -> None:
        """Import papers from files. Re-importing the same file changes nothing."""
        c: Context = ctx.obj
        summary = import_paths(
            c, files, namespace=id_namespace, rejects_file=rejects_file, batch_size=batch_size
        )
        if summary.broken or (summary.rejected and not keep_going):
            raise typer.Exit(1)
