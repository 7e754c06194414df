"""``paperfeed search`` and ``paperfeed similar``: the search service from the terminal."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

import orjson
import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from paperfeed.domain.ids import InvalidPaperId, normalize_paper_id
from paperfeed.domain.results import SearchHit
from paperfeed.domain.search import SearchFilters, Span

from .context import Context, fail

__all__ = ["register"]


def _day(value: str | None, flag: str) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise fail(f"{flag}: not a date (expected YYYY-MM-DD): {value[:40]!r}") from None


def _marked(text: str, spans: tuple[Span, ...], limit: int | None = None) -> Text:
    out = Text(text[:limit] + ("…" if limit and len(text) > limit else ""))
    for span in spans:
        if limit is None or span.start < limit:
            out.stylize("bold yellow", span.start, min(span.end, limit or span.end))
    return out


def _hit_json(hit: SearchHit) -> dict[str, Any]:
    p = hit.paper
    return {
        "id": p.id,
        "title": p.title,
        "authors": list(p.authors),
        "published": p.published.isoformat() if p.published else None,
        "categories": list(p.categories),
        "upvotes": p.upvotes,
        "score": round(hit.score, 6),
        "keyword_rank": hit.keyword_rank,
        "dense_rank": hit.dense_rank,
        "similarity": None if hit.similarity is None else round(hit.similarity, 6),
        "abstract": p.abstract,
        "title_spans": [[s.start, s.end] for s in hit.title_spans],
        "abstract_spans": [[s.start, s.end] for s in hit.abstract_spans],
    }


def _table(hits: list[SearchHit], title: str) -> Table:
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
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines instead of a table.")] = False,
    ) -> None:
        """Search papers by meaning and by words (hybrid: BM25 + embeddings)."""
        c: Context = ctx.obj
        filters = SearchFilters(
            date_from=_day(date_from, "--from"),
            date_to=_day(date_to, "--until"),
            categories=tuple(category or ()),
            has_code=True if has_code else None,
        )
        page = c.app.search.search(query, filters, limit=limit, offset=offset)
        for note in page.notes:
            c.err.print(f"[yellow]note:[/] {escape(note)}")
        if as_json:
            for hit in page.hits:
                typer.echo(orjson.dumps(_hit_json(hit)).decode())
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
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines instead of a table.")] = False,
    ) -> None:
        """Papers most similar to one paper (embedding neighbours and a keyword query of its text, fused)."""
        c: Context = ctx.obj
        try:
            key = normalize_paper_id(paper_id).base
        except InvalidPaperId as exc:
            raise fail(str(exc)) from None
        if c.app.store.get_paper(key) is None:
            raise fail(f"paper {key} is not in the store (paperfeed fetch {key} adds it)", code=1)
        hits = c.app.search.similar(key, limit)
        if as_json:
            for hit in hits:
                typer.echo(orjson.dumps(_hit_json(hit)).decode())
            return
        if not hits:
            c.console.print(
                "no similar papers found (`paperfeed index` embeds the papers, which finds more).",
                highlight=False,
            )
            return
        c.console.print(_table(hits, f"similar to {key}"))
