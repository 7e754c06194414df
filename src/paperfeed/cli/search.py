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
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from paperfeed.domain.results import SearchHit
    from paperfeed.domain.search import Span

__all__ = ["register"]

FormatOption = Annotated[
    OutputFormat | None,
    typer.Option(
        "--format",
        "-f",
        case_sensitive=False,
        help="table (on a terminal), lines (one line per result: the default in a pipe or a narrow "
        "terminal), json (one array), jsonl (one object per line), csv (with a header) or bibtex.",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Same as --format jsonl.")]

# Below this many columns a table's paper column is too narrow to read (a row became ~18 lines): one line
# per result instead.
NARROW = 72


def _output_format(fmt: OutputFormat | None, as_json: bool, console: Console) -> OutputFormat:
    """The format asked for; unasked, a table on a terminal wide enough for one, else one line a result."""
    if as_json and fmt not in (None, OutputFormat.table, OutputFormat.jsonl):
        raise fail(f"--json means --format jsonl; it cannot go with --format {fmt.value}")
    if as_json:
        return OutputFormat.jsonl
    if fmt is not None:
        return fmt
    return OutputFormat.table if console.is_terminal and console.width >= NARROW else OutputFormat.lines


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


def _votes(hit: SearchHit) -> str:
    return "" if hit.paper.upvotes is None else f"{hit.paper.upvotes:,}"


def _published(hit: SearchHit) -> str:
    return hit.paper.published.date().isoformat() if hit.paper.published else ""


def _table(hits: list[SearchHit], title: str, first_rank: int, width: int) -> Table:
    """Rank, id, date and upvotes as wide as their content; the paper column takes the rest, its abstract
    cut to about three of its lines."""
    from rich.table import Table

    table = Table(title=title, show_lines=True, expand=True)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("paper", ratio=1)
    votes = [_votes(h) for h in hits]
    if any(votes):
        table.add_column("upvotes", justify="right", no_wrap=True)  # as the feed and search pages show them
    table.add_column("date", no_wrap=True)
    table.add_column("id", no_wrap=True)
    fixed = len(str(first_rank + len(hits) - 1)) + 10 + max(len(h.paper.id) for h in hits)
    fixed += max(7, *map(len, votes)) if any(votes) else 0
    columns = 5 if any(votes) else 4
    paper_width = max(20, width - fixed - 3 * columns - 1)  # a border and two spaces of padding a column
    snippet = min(300, 3 * paper_width)
    for rank, hit in enumerate(hits, start=first_rank):
        p = hit.paper
        body = _marked(p.title, hit.title_spans)
        body.stylize("bold", 0, len(p.title))
        authors = ", ".join(p.authors[:4]) + (" et al." if len(p.authors) > 4 else "")
        body.append("\n" + authors, style="dim")
        body.append("\n")
        body.append_text(_marked(p.abstract, hit.abstract_spans, snippet))
        if hit.reasons:  # similar papers: their links in the citation graph
            body.append("\nwhy: " + "; ".join(r.text for r in hit.reasons), style="italic")
        cells: list[Text | str] = [
            str(rank),
            body,
            *([_votes(hit)] if any(votes) else []),
            _published(hit),
            p.id,
        ]
        table.add_row(*cells)
    return table


def _print_lines(console: Console, hits: list[SearchHit], first_rank: int) -> None:
    """One line per result: rank, id, date, upvotes (when any result has some), title, and for similar
    papers why. Columns are as wide as their content; on a terminal a line is cut to its width, in a pipe
    it is whole (``grep``, ``cut -f``-free reading, ``head``)."""
    from rich.text import Text

    ranks = len(str(first_rank + len(hits) - 1))
    ids = max(len(h.paper.id) for h in hits)
    votes = [_votes(h) for h in hits]
    vote_width = max(map(len, votes))
    fit = console.is_terminal
    for rank, (hit, vote) in enumerate(zip(hits, votes, strict=True), start=first_rank):
        day = _published(hit) or "-"
        head = f"{rank:>{ranks}}  {hit.paper.id:<{ids}}  {day:<10}  " + (
            f"{vote:>{vote_width}}  " if vote_width else ""
        )
        line = Text(head)
        line.append_text(_marked(hit.paper.title, hit.title_spans))
        if hit.reasons:
            line.append("  (why: " + "; ".join(r.text for r in hit.reasons) + ")", style="italic")
        if fit:
            console.print(line, no_wrap=True, overflow="ellipsis", highlight=False)
        else:
            console.print(line, soft_wrap=True, highlight=False)


def _show(c: Context, fmt: OutputFormat, hits: list[SearchHit], title: str, first_rank: int = 1) -> None:
    """``hits`` for people: a table, or one line each (the title then goes to stderr: stdout is results)."""
    if fmt is OutputFormat.lines:
        c.err.print(title, highlight=False, markup=False, soft_wrap=True)
        _print_lines(c.console, hits, first_rank)
    else:
        c.console.print(_table(hits, escape(title), first_rank, c.console.width))


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
        fmt: FormatOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """Search papers by meaning and by words (hybrid: BM25 + embeddings)."""
        from paperfeed.domain.search import SearchFilters

        c: Context = ctx.obj
        if not query.strip():  # a usage error, not a search that found nothing
            raise fail(
                'the query is empty: give words to search for, e.g. paperfeed search "graph neural networks"'
            )
        fmt = _output_format(fmt, as_json, c.console)
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
        if fmt not in (OutputFormat.table, OutputFormat.lines):
            sys.stdout.write(render(fmt, page.hits, first_rank=offset + 1))
            return
        if not page.hits:
            c.err.print("no results. Try fewer or other words, or drop a filter.", highlight=False)
            return
        shown = f"{offset + 1}–{offset + len(page.hits)} of {page.total:,}"
        _show(c, fmt, list(page.hits), f"{query}  ({shown})", offset + 1)

    @app.command("similar")
    def similar(
        ctx: typer.Context,
        paper_id: Annotated[str, typer.Argument(help="arXiv id (any spelling) or a source-prefixed id.")],
        limit: Annotated[int, typer.Option(min=1, max=100, help="Papers to show.")] = 10,
        fmt: FormatOption = None,
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
        fmt = _output_format(fmt, as_json, c.console)
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
        if fmt not in (OutputFormat.table, OutputFormat.lines):
            sys.stdout.write(render(fmt, hits))
            return
        if not hits:
            c.err.print(
                "no similar papers found (`paperfeed index` embeds the papers, which finds more).",
                highlight=False,
            )
            return
        by = "" if chosen == "overall" else f" by {chosen}"
        _show(c, fmt, list(hits), f"similar to {key}{by}")
