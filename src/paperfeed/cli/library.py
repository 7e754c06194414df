"""``paperfeed library import FILE --user EMAIL`` and ``paperfeed library export --user EMAIL``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from paperfeed.domain.errors import SourceAnswerError, SourceUnavailable
from paperfeed.domain.library import DEFAULT_TAG, FORMATS, BibliographyError, Format, InvalidLibraryInput
from paperfeed.domain.wording import count

from .context import Context, fail
from .progress import RichProgress

__all__ = ["library_app"]

library_app = typer.Typer(
    help="A reader's library: import papers from BibTeX, RIS, CSL-JSON or a list of arXiv ids; export it.",
    no_args_is_help=True,
)

UserOption = Annotated[str, typer.Option("--user", help="Email address of the reader whose library it is.")]
TagOption = Annotated[str, typer.Option("--tag", help="Tag to save the papers to (created if missing).")]


def _user_id(c: Context, email: str) -> int:
    user_id = c.app.readers.library.user_id_for_email(email)
    if user_id is None:
        raise fail(f"no user with email {email.strip()!r}")
    return user_id


@library_app.command("import")
def import_library(
    ctx: typer.Context,
    file: Annotated[
        Path, typer.Argument(help="A .bib, .ris, CSL-JSON (.json) or text file of arXiv ids/URLs.")
    ],
    user: UserOption,
    tag: TagOption = DEFAULT_TAG,
    fmt: Annotated[
        str, typer.Option("--format", help="auto (by extension, then content), bibtex, ris, csl-json or ids.")
    ] = "auto",
    no_fetch: Annotated[
        bool, typer.Option("--no-fetch", help="Do not fetch papers missing here from arXiv; report them.")
    ] = False,
    keep_going: Annotated[
        bool, typer.Option("--keep-going", help="Exit 0 even when some entries could not be saved.")
    ] = False,
    with_tags: Annotated[
        bool,
        typer.Option(
            "--with-tags",
            help="Save each entry to the tags its keywords name (--tag when none) and import its note "
            "where you have none: re-importing an export of `paperfeed library export`.",
        ),
    ] = False,
) -> None:
    """Save every paper of a bibliography to a reader's library (importing twice changes nothing).

    Papers not yet in this instance are fetched from the arXiv API. Entries without an arXiv id, and ids
    arXiv does not know, are listed with file:line and why. Exit 1 when some entries were not saved
    (unless --keep-going), 2 for an unreadable file or unknown user (nothing is saved), 3 when arXiv
    cannot be reached (nothing is saved; run again).
    """
    c: Context = ctx.obj
    if fmt not in FORMATS:
        raise fail(f"--format must be {', '.join(FORMATS[:-1])} or {FORMATS[-1]}, not {fmt!r}")
    if not file.is_file():
        raise fail(f"{file}: no such file")
    user_id = _user_id(c, user)
    fmt_value: Format = fmt  # type: ignore[assignment]
    try:
        with RichProgress(c.err, "arXiv API", unit="items") as progress:
            report = c.app.readers.library_import.import_file(
                user_id,
                file,
                tag=tag,
                fmt=fmt_value,
                fetch=not no_fetch,
                progress=progress,
                with_tags=with_tags,
            )
    except BibliographyError as exc:
        raise fail(f"{exc}; nothing was imported") from None
    except InvalidLibraryInput as exc:
        raise fail(str(exc)) from None
    except SourceUnavailable as exc:
        raise fail(f"arXiv API unreachable: {exc}; nothing was saved, run the import again", 3) from None
    except SourceAnswerError as exc:
        raise fail(f"arXiv API: {exc}; nothing was saved", 3) from None
    where = f"the file's tags (“{report.tag}” when none)" if with_tags else f"“{report.tag}”"
    for work in report.problems[:100]:
        c.err.print(f"  not saved {work.where}: {work.problem}", highlight=False, markup=False)
    if len(report.problems) > 100:
        c.err.print(f"  … and {len(report.problems) - 100:,} more")
    c.console.print(
        f"{report.source}: {count(report.entries, 'entry')}, {report.with_arxiv_id:,} with an arXiv id; "
        f"saved {report.saved:,} new to {where} ({report.already_saved:,} already there), "
        f"fetched {report.fetched:,} from arXiv, {report.not_saved:,} not saved"
        + (f", {count(report.notes, 'note')} added" if with_tags else ""),
        highlight=False,
        markup=False,
    )
    if report.problems and not keep_going:
        raise typer.Exit(1)


@library_app.command("export")
def export_library(
    ctx: typer.Context,
    user: Annotated[
        str | None,
        typer.Option("--user", help="Email address of the reader whose library it is (not with --search)."),
    ] = None,
    tag: Annotated[
        str | None, typer.Option("--tag", help="Only this tag (default: the whole library).")
    ] = None,
    search: Annotated[
        str | None,
        typer.Option("--search", help="Export the results of this search instead (no tags or notes)."),
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=1000, help="With --search: how many results.")
    ] = 100,
    fmt: Annotated[
        str, typer.Option("--format", help="bibtex, ris, csljson, or ids (one arXiv id per line).")
    ] = "bibtex",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
    with_references: Annotated[
        bool,
        typer.Option(
            "--with-references",
            help="BibTeX only: add every work the papers cite (from the citation graph), each once "
            "(keys unique across the file; tags and notes are left out).",
        ),
    ] = False,
) -> None:
    """Write a reader's saved papers (newest save first, with their tags and notes), one tag's, or a
    search's results, as BibTeX, RIS or CSL-JSON for Zotero and other reference managers."""
    from paperfeed.domain.reference_formats import (
        EXPORT_FORMATS,
        Reference,
        UnknownExportFormat,
        export_format,
        render,
    )
    from paperfeed.services.library import LibraryNotFound

    c: Context = ctx.obj
    try:
        chosen = None if fmt.strip().lower() == "ids" else export_format(fmt)
    except UnknownExportFormat:
        raise fail(f"--format must be {', '.join(EXPORT_FORMATS)} or ids, not {fmt!r}") from None
    if with_references and chosen != "bibtex":
        raise fail("--with-references needs --format bibtex")
    refs: list[Reference]
    if search is not None:
        if user is not None or tag is not None:
            raise fail("--search exports search results: give it without --user and --tag")
        if not search.strip():
            raise fail("--search needs a query")
        page = c.app.search.hybrid.search(search, limit=limit)
        refs = [Reference(hit.paper) for hit in page.hits]
    else:
        if user is None:
            raise fail("give --user EMAIL (whose library), or --search QUERY")
        user_id = _user_id(c, user)
        library = c.app.readers.library
        tag_id = None
        if tag is not None:
            try:
                found = library.records.tag_named(user_id, tag)
            except InvalidLibraryInput as exc:
                raise fail(str(exc)) from None
            if found is None:
                raise fail(f"{user} has no tag named {tag!r}")
            tag_id = found.id
        try:
            refs = library.references(user_id, tag_id=tag_id)[0]
        except LibraryNotFound as exc:
            raise fail(str(exc)) from None
    text = "".join(ref.paper.id + "\n" for ref in refs) if chosen is None else render(chosen, refs)
    cited = 0
    if with_references:  # keys made unique across the papers and the works they cite
        entries = c.app.catalogue.references.bibtex([ref.paper for ref in refs])
        cited = len(entries) - len(refs)
        text = "".join(entry + "\n\n" for entry in entries)
    if output is None:
        sys.stdout.write(text)
    else:
        try:
            c.app.core.write_private_file(output, text.encode())  # 0600: a reader's tags and notes
        except OSError as exc:
            raise fail(f"{output}: cannot write: {exc.strerror or exc}") from None
        also = f" and {count(cited, 'reference')}" if with_references else ""
        c.err.print(f"wrote {count(len(refs), 'paper')}{also} to {output}", highlight=False, markup=False)
