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
        table.add_row(str(i), body, day, p.id)
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
        fmt = _output_format(fmt, as_json)
        filters = SearchFilters(
            date_from=_day(date_from, "--from"),
            date_to=_day(date_to, "--until"),
            categories=tuple(category or ()),
            has_code=True if has_code else None,
        )
        page = c.app.one_shot_search.search(query, filters, limit=limit, offset=offset)
        for note in page.notes:
            c.err.print(f"[yellow]note:[/] {escape(note)}")
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
    ) -> None:
        """Papers most similar to one paper (embedding neighbours fused with its citation graph)."""
        from paperfeed.domain.ids import InvalidPaperId, normalize_paper_id

        c: Context = ctx.obj
        fmt = _output_format(fmt, as_json)
        try:
            key = normalize_paper_id(paper_id).base
        except InvalidPaperId as exc:
            raise fail(str(exc)) from None
        if c.app.store.get_paper(key) is None:
            raise fail(f"paper {key} is not in the store (paperfeed fetch {key} adds it)", code=1)
        hits = c.app.search.similar(key, limit)
        if fmt is not OutputFormat.table:
            sys.stdout.write(render(fmt, hits))
            return
        if not hits:
            c.console.print(
                "no similar papers found (`paperfeed index` embeds the papers, which finds more).",
                highlight=False,
            )
            return
        c.console.print(_table(hits, f"similar to {key}"))
