"""``paperfeed migrate``: bring the database schema to this version of paperfeed."""

from __future__ import annotations

from typing import Annotated

import typer

from .context import Context, fail


def register(app: typer.Typer) -> None:
    @app.command("migrate")
    def migrate(
        ctx: typer.Context,
        check: Annotated[
            bool, typer.Option("--check", help="Only report; exit 1 when the schema is behind.")
        ] = False,
    ) -> None:
        """Upgrade the database schema (every command does it on open; run it once before starting
        several workers on one PostgreSQL database)."""
        from paperfeed.domain.errors import InvalidDatabaseUrl, StoreError

        c: Context = ctx.obj
        try:
            state = c.app.maintenance.store.schema(upgrade=not check)
        except InvalidDatabaseUrl as exc:
            raise fail(f"database URL: {exc}") from None
        except StoreError as exc:
            raise fail(str(exc), 3) from None
        where, before, head = state.location, state.current, state.head
        if check:
            c.console.print(f"{where}: schema {before or 'empty'}, this paperfeed needs {head}")
            if state.behind:
                raise typer.Exit(1)
            return
        if not state.behind:
            c.console.print(f"{where}: schema already at {head}", highlight=False)
        else:
            c.console.print(f"{where}: schema upgraded from {before or 'empty'} to {head}", highlight=False)
