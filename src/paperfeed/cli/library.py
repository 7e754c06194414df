"""``paperfeed library import FILE --user EMAIL`` and ``paperfeed library export --user EMAIL``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from paperfeed.domain.errors import SourceAnswerError, SourceUnavailable
from paperfeed.domain.library import DEFAULT_TAG, BibliographyError, Format, InvalidLibraryInput
from paperfeed.domain.models import Paper
from paperfeed.services.library import LibraryNotFound

from .context import Context, fail
from .progress import RichProgress

__all__ = ["library_app"]

library_app = typer.Typer(
    help="A reader's library: import papers from BibTeX, CSL-JSON or a list of arXiv ids; export it.",
    no_args_is_help=True,
)

UserOption = Annotated[str, typer.Option("--user", help="Email address of the reader whose library it is.")]
TagOption = Annotated[str, typer.Option("--tag", help="Tag to save the papers to (created if missing).")]


def _user_id(c: Context, email: str) -> int:
    user_id = c.app.library.user_id_for_email(email)
    if user_id is None:
        raise fail(f"no user with email {email.strip()!r}")
    return user_id


@library_app.command("import")
def import_library(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="A .bib, CSL-JSON (.json) or text file of arXiv ids/URLs.")],
    user: UserOption,
    tag: TagOption = DEFAULT_TAG,
    fmt: Annotated[
        str, typer.Option("--format", help="auto (by extension, then content), bibtex, csl-json or ids.")
    ] = "auto",
    no_fetch: Annotated[
        bool, typer.Option("--no-fetch", help="Do not fetch papers missing here from arXiv; report them.")
    ] = False,
    keep_going: Annotated[
        bool, typer.Option("--keep-going", help="Exit 0 even when some entries could not be saved.")
    ] = False,
) -> None:
    """Save every paper of a bibliography to a reader's library (importing twice changes nothing).

    Papers not yet in this instance are fetched from the arXiv API. Entries without an arXiv id, and ids
    arXiv does not know, are listed with file:line and why. Exit 1 when some entries were not saved
    (unless --keep-going), 2 for an unreadable file or unknown user (nothing is saved), 3 when arXiv
    cannot be reached (nothing is saved; run again).
    """
    c: Context = ctx.obj
    if fmt not in ("auto", "bibtex", "csl-json", "ids"):
        raise fail(f"--format must be auto, bibtex, csl-json or ids, not {fmt!r}")
    if not file.is_file():
        raise fail(f"{file}: no such file")
    user_id = _user_id(c, user)
    fmt_value: Format = fmt  # type: ignore[assignment]
    try:
        with RichProgress(c.err, "arXiv API", unit="items") as progress:
            report = c.app.library_import.import_file(
                user_id, file, tag=tag, fmt=fmt_value, fetch=not no_fetch, progress=progress
            )
    except BibliographyError as exc:
        raise fail(f"{exc}; nothing was imported") from None
    except InvalidLibraryInput as exc:
        raise fail(str(exc)) from None
    except SourceUnavailable as exc:
        raise fail(f"arXiv API unreachable: {exc}; nothing was saved, run the import again", 3) from None
    except SourceAnswerError as exc:
        raise fail(f"arXiv API: {exc}; nothing was saved", 3) from None
    for work in report.problems[:100]:
        c.err.print(f"  not saved {work.where}: {work.problem}", highlight=False, markup=False)
    if len(report.problems) > 100:
        c.err.print(f"  … and {len(report.problems) - 100:,} more")
    c.console.print(
        f"{report.source}: {report.entries:,} entries, {report.with_arxiv_id:,} with an arXiv id; "
        f"saved {report.saved:,} new to “{report.tag}” ({report.already_saved:,} already there), "
        f"fetched {report.fetched:,} from arXiv, {report.not_saved:,} not saved",
        highlight=False,
        markup=False,
    )
    if report.problems and not keep_going:
        raise typer.Exit(1)


@library_app.command("export")
def export_library(
    ctx: typer.Context,
    user: UserOption,
    tag: Annotated[
        str | None, typer.Option("--tag", help="Only this tag (default: the whole library).")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="bibtex or ids (one arXiv id per line).")] = "bibtex",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
    with_references: Annotated[
        bool,
        typer.Option(
            "--with-references",
            help="BibTeX only: add every work the papers cite (from the citation graph), each once.",
        ),
    ] = False,
) -> None:
    """Write a reader's saved papers as BibTeX or as a list of ids (newest save first)."""
    from paperfeed.domain.citation import bibtex

    c: Context = ctx.obj
    if fmt not in ("bibtex", "ids"):
        raise fail(f"--format must be bibtex or ids, not {fmt!r}")
    if with_references and fmt != "bibtex":
        raise fail("--with-references needs --format bibtex")
    user_id = _user_id(c, user)
    library = c.app.library
    tag_id = None
    if tag is not None:
        try:
            found = library.records.tag_named(user_id, tag)
        except InvalidLibraryInput as exc:
            raise fail(str(exc)) from None
        if found is None:
            raise fail(f"{user} has no tag named {tag!r}")
        tag_id = found.id
    chunks: list[str] = []
    saved: list[Paper] = []
    offset = 0
    try:
        while True:
            page = library.library(user_id, tag_id=tag_id, limit=200, offset=offset)
            for entry in page.entries:
                chunks.append(bibtex(entry.paper) + "\n" if fmt == "bibtex" else entry.paper.id)
                saved.append(entry.paper)
            offset += page.limit
            if offset >= page.total:
                break
    except LibraryNotFound as exc:
        raise fail(str(exc)) from None
    if with_references:  # keys made unique across the papers and their references
        chunks = [entry + "\n" for entry in c.app.reference_bibliography.bibtex(saved)]
    text = "\n".join(chunks) + ("\n" if chunks else "")
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
        refs = f" and {len(chunks) - len(saved):,} references" if with_references else ""
        c.err.print(f"wrote {len(saved):,} papers{refs} to {output}", highlight=False)
