"""``paperfeed stats``: what the store holds."""

from __future__ import annotations

from typing import Annotated

import orjson
import typer

from .context import Context


def register(app: typer.Typer) -> None:
    @app.command("stats")
    def stats(
        ctx: typer.Context,
        as_json: Annotated[
            bool, typer.Option("--json", help="Print one JSON object (one line) instead of a table.")
        ] = False,
    ) -> None:
        """Show how many papers and listings the store holds, and from which sources."""
        c: Context = ctx.obj
        s = c.app.reads.stats()
        if as_json:
            typer.echo(orjson.dumps(s).decode())
            return
        from rich.table import Table

        table = Table(title=f"paperfeed store: {s.location}", show_header=False)
        table.add_row("papers", f"{s.papers:,}")
        table.add_row("daily listings", f"{s.listings:,} on {s.listing_days:,} days")
        table.add_row("published", f"{s.first_published or '-'} → {s.last_published or '-'}")
        for name, count in s.by_source.items():
            table.add_row(f"  seen by {name}", f"{count:,}")
        c.console.print(table)
