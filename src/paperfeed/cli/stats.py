"""``paperfeed stats``: what the store holds, and what was derived from it (vectors, topics)."""

from __future__ import annotations

from typing import Annotated

import orjson
import typer

from paperfeed.domain.wording import count

from .context import Context
from .tables import print_table


def register(app: typer.Typer) -> None:
    @app.command("stats")
    def stats(
        ctx: typer.Context,
        as_json: Annotated[
            bool, typer.Option("--json", help="Print one JSON object (one line) instead of a table.")
        ] = False,
    ) -> None:
        """Show how many papers and listings the store holds, and from which sources; how many papers have
        a vector for meaning search (per embedding model), and when topics were built and how many."""
        c: Context = ctx.obj
        store = c.app.maintenance.store
        s = store.stats()
        derived = store.derived_stats()
        if as_json:
            row = orjson.loads(orjson.dumps(s))
            row.update(orjson.loads(orjson.dumps(derived)))  # vectors, topics (docs/cli.md)
            typer.echo(orjson.dumps(row).decode())
            return
        from rich.table import Table

        table = Table(title=f"paperfeed store: {s.location}", show_header=False)
        table.add_row("papers", f"{s.papers:,}")
        table.add_row("daily listings", f"{s.listings:,} on {count(s.listing_days, 'day')}")
        table.add_row("published", f"{s.first_published or '-'} → {s.last_published or '-'}")
        for name, n in s.by_source.items():
            table.add_row(f"  seen by {name}", f"{n:,}")
        if not derived.vectors:
            table.add_row("with a vector", "none yet (paperfeed index embeds them; paperfeed run does it)")
        for model, n in derived.vectors.items():
            share = f" ({n / s.papers:.0%})" if s.papers else ""
            table.add_row("with a vector", f"{n:,} of {s.papers:,}{share}, model {model}")
        build = derived.topics
        if build is None:
            table.add_row("topics", "none built yet (paperfeed topics build)")
        else:
            coarse = f" in {count(build.coarse, 'group')}" if build.coarse else ""
            table.add_row(
                "topics",
                f"{build.topics:,}{coarse}, built {build.built_at:%Y-%m-%d %H:%M} UTC from "
                f"{count(build.papers, 'paper')} ({build.method}, model {build.model_id})",
            )
        print_table(c.console, table)
