"""``paperfeed search`` and ``paperfeed similar``: the search service from the terminal."""

from __future__ import annotations

import sys
from datetime import date
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from .context import Context, fail
from .formats import OutputFormat, render

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

    from paperfeed.domain.results import SearchHit
    from paperfeed.domain.search import Span

__all__ = ["register"]

FormatOption = Annotated[
    OutputFormat,
    typer.Option(
        "--format",
        "-f",
        case_sensitive=False,
        help="table, json (one array), jsonl (one object per line), csv (with a header) or bibtex.",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Same as --format jsonl.")]


def _output_format(fmt: OutputFormat, as_json: bool) -> OutputFormat:
    if as_json and fmt not in (OutputFormat.table, OutputFormat.jsonl):
        raise fail(f"--json means --format jsonl; it cannot go with --format {fmt.value}")
    return OutputFormat.jsonl if as_json else fmt


def _day(value: str | None, flag: str) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise fail(f"{flag}: not a date (expected YYYY-MM-DD): {value[:40]!r}") from None


def _marked(text: str, spans: tuple[Span, ...], limit: int | None = None) -> Text:
    from rich.text import Text

    out = Text(text[:limit] + ("…" if limit and len(text) > limit else ""))
    for span in spans:
        if limit is None or span.start < limit:
            out.stylize("bold yellow", span.start, min(span.end, limit or span.end))
    return out


def _table(hits: list[SearchHit], title: str) -> Table:
    from rich.table import Table

    table = Table(title=title, show_lines=True, expand=True)
    table.add_column("#", justify="right", width=3)
    table.add_column("paper", ratio=1)
    table.add_column("upvotes", justify="right", width=7)  # as the feed and search pages show them
    table.add_column("date", width=10)
    table.add_column("id", width=16)
    for i, hit in enumerate(hits, start=1):
        p = hit.paper
        body = _marked(p.title, hit.title_spans)
        body.stylize("bold", 0, len(p.title))
        authors = ", ".join(p.authors[:4]) + (" et al." if len(p.authors) > 4 else "")
        body.append("\n" + authors, style="dim")
        body.append("\n")
        body.append_text(_marked(p.abstract, hit.abstract_spans, 300))
        if hit.reasons:  # similar papers: their links in the citation graph
            body.append("\nwhy: " + "; ".join(r.text for r in hit.reasons), style="italic")
        day = p.published.date().isoformat() if p.published else ""
        votes = "" if p.upvotes is None else f"{p.upvotes:,}"
        table.add_row(str(i), body, votes, day, p.id)
    return table


def register(app: typer.Typer) -> None:
    @app.command("search")
    def search(
        ctx: typer.Context,
        query: Annotated[
            str, typer.Argument(help='Words, "a phrase", -excluded, author:Name, cat:cs.CL, year:2024')
        ],
        limit: Annotated[int, typer.Option(min=1, max=200, help="Results to show.")] = 10,
        offset: Annotated[int, typer.Option(min=0, max=10_000, help="Results to skip (paging).")] = 0,
        date_from: Annotated[
            str | None, typer.Option("--from", help="Published on or after, YYYY-MM-DD.")
        ] = None,
        date_to: Annotated[
            str | None, typer.Option("--until", help="Published on or before, YYYY-MM-DD.")
        ] = None,
        category: Annotated[
            list[str] | None, typer.Option("--cat", help="arXiv category (repeatable: any of).")
        ] = None,
        has_code: Annotated[
            bool, typer.Option("--has-code", help="Only papers with a GitHub repository.")
        ] = False,
        fmt: FormatOption = OutputFormat.table,
        as_json: JsonOption = False,
    ) -> None:
        """Search papers by meaning and by words (hybrid: BM25 + embeddings)."""
        from paperfeed.domain.search import SearchFilters

        c: Context = ctx.obj
        if not query.strip():  # a usage error, not a search that found nothing
            raise fail(
                'the query is empty: give words to search for, e.g. paperfeed search "graph neural networks"'
            )
        fmt = _output_format(fmt, as_json)
        filters = SearchFilters(
            date_from=_day(date_from, "--from"),
            date_to=_day(date_to, "--until"),
            categories=tuple(category or ()),
            has_code=True if has_code else None,
        )
        page = c.app.search.one_shot.search(query, filters, limit=limit, offset=offset)
        notes = list(page.notes)
        if not notes:  # as the web says: how much meaning search covers while papers are being embedded
            coverage = c.app.indexes.one_shot_coverage.note()  # (a degraded search has said why already)
            if coverage:
                notes.append(coverage)
        for note in notes:
            c.err.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
        if fmt is not OutputFormat.table:
            sys.stdout.write(render(fmt, page.hits, first_rank=offset + 1))
            return
        if not page.hits:
            c.console.print("no results. Try fewer or other words, or drop a filter.", highlight=False)
            return
        shown = f"{offset + 1}–{offset + len(page.hits)} of {page.total}"
        c.console.print(_table(list(page.hits), f"{escape(query)}  ({shown})"))

    @app.command("similar")
    def similar(
        ctx: typer.Context,
        paper_id: Annotated[str, typer.Argument(help="arXiv id (any spelling) or a source-prefixed id.")],
        limit: Annotated[int, typer.Option(min=1, max=100, help="Papers to show.")] = 10,
        fmt: FormatOption = OutputFormat.table,
        as_json: JsonOption = False,
        facet: Annotated[
            str,
            typer.Option(
                "--facet",
                help="overall (default), background, method or result: papers whose sentences of that "
                "role match this paper's (docs/search.md).",
            ),
        ] = "overall",
    ) -> None:
        """Papers most similar to one paper: its text neighbours, fused with its citation graph where it has
        links (each saying why); with --facet, by background, method or result."""
        from paperfeed.domain.ids import InvalidPaperId, normalize_paper_id
        from paperfeed.domain.sentences import parse_facet

        c: Context = ctx.obj
        fmt = _output_format(fmt, as_json)
        try:
            key = normalize_paper_id(paper_id).base
            chosen = parse_facet(facet)
        except (InvalidPaperId, ValueError) as exc:
            raise fail(str(exc)) from None
        page = c.app.search.facets.of_id(key, chosen, limit)
        if page is None:
            raise fail(
                f"paper {key} is not in the store or is hidden (paperfeed fetch {key} adds it)", code=1
            )
        hits = page.hits
        if page.note:
            c.err.print(f"[yellow]note:[/] {escape(page.note)}", highlight=False)
        if fmt is not OutputFormat.table:
            sys.stdout.write(render(fmt, hits))
            return
        if not hits:
            c.console.print(
                "no similar papers found (`paperfeed index` embeds the papers, which finds more).",
                highlight=False,
            )
            return
        by = "" if chosen == "overall" else f" by {chosen}"
        c.console.print(_table(hits, f"similar to {key}{by}"))
