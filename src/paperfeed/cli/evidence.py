"""``paperfeed evidence``: the papers' own sentences that bear on a question, from the terminal (#42)."""

from __future__ import annotations

import csv
import io
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from .context import Context, fail
from .formats import OutputFormat, csv_cell
from .search import _day, _marked, _output_format

if TYPE_CHECKING:
    from paperfeed.domain.evidence import EvidenceGroup, EvidenceHit

__all__ = ["CSV_FIELDS", "register", "sentence_json"]

# Field names and order are part of the CLI's stable interface (docs/cli.md): add at the end only.
CSV_FIELDS = (
    "rank",
    "id",
    "title",
    "authors",
    "published",
    "role",
    "role_probability",
    "score",
    "position",
    "start",
    "end",
    "text",
    "before",
    "after",
)


def sentence_json(group: EvidenceGroup, hit: EvidenceHit) -> dict[str, Any]:
    """One sentence as ``--format json``/``jsonl`` print it (docs/cli.md lists the fields)."""
    p = group.paper
    return {
        "rank": hit.rank,
        "id": p.id,
        "title": p.title,
        "authors": list(p.authors),
        "published": p.published.date().isoformat() if p.published else None,
        "role": hit.role,
        "role_probability": round(hit.role_probability, 4),
        "score": round(hit.score, 6),
        "position": hit.position,
        "start": hit.start,
        "end": hit.end,
        "text": hit.text,
        "before": hit.before,
        "after": hit.after,
        "spans": [[s.start, s.end] for s in hit.spans],
    }


def _rows(groups: tuple[EvidenceGroup, ...]) -> list[dict[str, Any]]:
    rows = [sentence_json(g, h) for g in groups for h in g.hits]
    return sorted(rows, key=lambda r: int(r["rank"]))


def _render(fmt: OutputFormat, groups: tuple[EvidenceGroup, ...]) -> str:
    import orjson

    rows = _rows(groups)
    if fmt is OutputFormat.jsonl:
        return "".join(orjson.dumps(r).decode() + "\n" for r in rows)
    if fmt is OutputFormat.json:
        return orjson.dumps(rows).decode() + "\n"
    if fmt is OutputFormat.csv:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(CSV_FIELDS)
        for row in rows:
            row["authors"] = "; ".join(row["authors"])
            writer.writerow([csv_cell(row[f]) for f in CSV_FIELDS])
        return out.getvalue()
    if fmt is OutputFormat.bibtex:  # the papers the sentences come from, each once, to cite them
        from paperfeed.domain.results import SearchHit

        from .formats import render

        return render(fmt, [SearchHit(g.paper, 0.0) for g in groups])
    raise ValueError(f"{fmt} is rendered by the caller")


def register(app: typer.Typer) -> None:
    @app.command("evidence")
    def evidence(
        ctx: typer.Context,
        question: Annotated[
            str,
            typer.Argument(help='A question or claim; the search syntax works too ("phrase", author:Name).'),
        ],
        limit: Annotated[int, typer.Option(min=1, max=100, help="Sentences to show.")] = 10,
        role: Annotated[
            list[str] | None,
            typer.Option(
                "--role",
                help="Only sentences of this role: background, objective, method, result, other "
                "(repeatable, or comma-separated; e.g. --role result).",
            ),
        ] = None,
        date_from: Annotated[
            str | None, typer.Option("--from", help="Published on or after, YYYY-MM-DD.")
        ] = None,
        date_to: Annotated[
            str | None, typer.Option("--until", help="Published on or before, YYYY-MM-DD.")
        ] = None,
        category: Annotated[
            list[str] | None, typer.Option("--cat", help="arXiv category (repeatable: any of).")
        ] = None,
        fmt: Annotated[
            OutputFormat,
            typer.Option(
                "--format",
                "-f",
                case_sensitive=False,
                help="table or lines (each paper, then its sentences quoted one a line), json (one array), "
                "jsonl (one sentence per line), csv (with a header) or bibtex (the papers quoted).",
            ),
        ] = OutputFormat.table,
        as_json: Annotated[bool, typer.Option("--json", help="Same as --format jsonl.")] = False,
    ) -> None:
        """The sentences of the papers' abstracts that bear on a question or claim, each quoted verbatim
        with its role and the sentences around it, grouped under its paper (not generated, no verdict)."""
        from paperfeed.domain.evidence import EVIDENCE_NOTICE, parse_roles
        from paperfeed.domain.search import SearchFilters

        c: Context = ctx.obj
        if not question.strip():
            raise fail('the question is empty: e.g. paperfeed evidence "dropout reduces overfitting"')
        fmt = _output_format(fmt, as_json, c.console)
        try:
            roles = parse_roles(role)
        except ValueError as exc:
            raise fail(f"--role: {exc}") from None
        filters = SearchFilters(
            date_from=_day(date_from, "--from"),
            date_to=_day(date_to, "--until"),
            categories=tuple(category or ()),
        )
        page = c.app.search.evidence.search(question, filters, roles, limit=limit)
        for note in page.notes:
            c.err.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
        if fmt not in (OutputFormat.table, OutputFormat.lines):  # lines: the same quotes, one a line
            sys.stdout.write(_render(fmt, page.groups))
            return
        c.err.print(f"[dim]{escape(EVIDENCE_NOTICE)}[/]", highlight=False)
        if not page.groups:
            c.console.print(
                "no sentences found. Try other words, another role, or drop a filter.", highlight=False
            )
            return
        from rich.text import Text

        for group in page.groups:
            p = group.paper
            head = Text(p.title, style="bold")
            day = p.published.date().isoformat() if p.published else "undated"
            authors = ", ".join(p.authors[:4]) + (" et al." if len(p.authors) > 4 else "")
            head.append(f"\n{p.id} · {day} · {authors}", style="dim")
            c.console.print(head)
            for hit in group.hits:
                line = Text(f"  {hit.rank:>3}. [{hit.role}] ", style="cyan")
                if hit.before:
                    line.append(hit.before + " ", style="dim")
                line.append_text(_marked(hit.text, hit.spans))
                if hit.after:
                    line.append(" " + hit.after, style="dim")
                c.console.print(line)
            c.console.print()
