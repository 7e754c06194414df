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
        from sqlalchemy.exc import ArgumentError, SQLAlchemyError

        c: Context = ctx.obj
        app_ = c.app
        try:
            engine = app_.schema_engine()
        except ArgumentError as exc:
            raise fail(f"database URL: {exc}") from None
        where = engine.url.render_as_string(hide_password=True)
        try:
            before, head = app_.schema_revisions(engine)
            if check:
                c.console.print(f"{where}: schema {before or 'empty'}, this paperfeed needs {head}")
                if before != head:
                    raise typer.Exit(1)
                return
            app_.upgrade_schema(engine)
        except SQLAlchemyError as exc:
            raise fail(f"{where}: {getattr(exc, 'orig', None) or exc}", 3) from None
        finally:
            engine.dispose()
        if before == head:
            c.console.print(f"{where}: schema already at {head}", highlight=False)
        else:
            c.console.print(f"{where}: schema upgraded from {before or 'empty'} to {head}", highlight=False)
