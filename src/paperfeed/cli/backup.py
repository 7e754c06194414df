"""``paperfeed backup DEST`` and ``paperfeed restore SRC`` (SQLite data folders; PostgreSQL: pg_dump)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from paperfeed.domain.errors import BackupError
from paperfeed.domain.wording import count

from .context import Context, fail

_PG_HINT = (
    "the store is PostgreSQL: back it up with pg_dump -Fc and restore with pg_restore "
    "(docs/operations.md); the indexes are inside the database there"
)


def register(app: typer.Typer) -> None:
    @app.command("backup")
    def backup(
        ctx: typer.Context,
        dest: Annotated[Path, typer.Argument(help="A new (or empty) folder to write the backup into.")],
    ) -> None:
        """Back up the database (a consistent snapshot, safe while the server runs) and the secret key.

        The keyword and vector indexes are not copied: `paperfeed restore` rebuilds them.
        """
        c: Context = ctx.obj
        settings = c.settings
        if settings.database_url is not None and not settings.db_url.startswith("sqlite"):
            raise fail(_PG_HINT)
        try:
            info = c.app.maintenance.store.backup(dest)
        except BackupError as exc:
            raise fail(str(exc)) from None
        c.console.print(
            f"backed up {count(info.papers, 'paper')} ({info.size / 1e6:,.1f} MB, schema "
            f"{info.schema_revision}) "
            f"to {dest} in {info.seconds:,.1f} s"
            + ("; with the data folder's secret key" if info.secret_key else ""),
            highlight=False,
        )

    @app.command("restore")
    def restore(
        ctx: typer.Context,
        src: Annotated[Path, typer.Argument(help="A folder written by paperfeed backup.")],
        force: Annotated[
            bool,
            typer.Option("--force", help="Replace a data folder that is not empty (stop paperfeed first)."),
        ] = False,
    ) -> None:
        """Restore a backup into the data folder, then rebuild the keyword, vector and sentence indexes."""
        from paperfeed.domain.search import VectorIndexError

        c: Context = ctx.obj
        settings = c.settings
        if settings.database_url is not None:
            raise fail(
                _PG_HINT if not settings.db_url.startswith("sqlite") else "restore into --data-dir only"
            )
        try:
            info = c.app.maintenance.store.restore(src, force=force)
        except BackupError as exc:
            raise fail(str(exc)) from None
        c.console.print(
            f"restored {count(info.papers, 'paper')} from the backup of {info.created_at} into "
            f"{settings.data_dir}",
            highlight=False,
        )
        app_ = c.app
        words = app_.indexes.keyword_maintenance
        words.catch_up()  # opening it builds it from the restored store
        c.console.print(f"keyword index rebuilt ({words.engine})", highlight=False)
        indexing = app_.indexes.indexer.current()
        if indexing.stored_vectors():
            try:
                synced = indexing.sync_index(full=True)
            except VectorIndexError as exc:
                raise fail(f"vector index: {exc}") from None
            c.console.print(
                f"vector index rebuilt from the stored vectors ({count(synced.size, 'vector')})",
                highlight=False,
            )
        else:
            c.console.print("no stored vectors of the configured model: run paperfeed index", highlight=False)
        # evidence search's sentence indexes are the data folder's own, made from the stored sentences
        from .index import catch_up_evidence

        catch_up_evidence(c, lambda text: c.console.print(text, highlight=False))
