"""``paperfeed copy --to URL``: copy this store into another database (SQLite → PostgreSQL)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from paperfeed.domain.wording import count

from .context import Context, fail
from .tables import print_table

if TYPE_CHECKING:
    from paperfeed.settings_model import SettingsModel


def register(app: typer.Typer) -> None:
    @app.command("copy")
    def copy(
        ctx: typer.Context,
        to: Annotated[
            str,
            typer.Option("--to", help="Target database URL, e.g. postgresql://paperfeed@db-host/paperfeed."),
        ],
        batch_size: Annotated[
            int, typer.Option("--batch-size", min=1, max=50_000, help="Rows per commit.")
        ] = 2000,
        restart: Annotated[
            bool, typer.Option("--restart", help="Ignore where an interrupted copy stopped; copy everything.")
        ] = False,
    ) -> None:
        """Copy the whole store (papers, listings, embeddings, accounts, everything) into another database,
        then build its search indexes. Safe to interrupt and to repeat: a re-run resumes and never
        duplicates."""
        from paperfeed.domain.errors import InvalidDatabaseUrl, StoreError
        from paperfeed.services.store_admin import CopyRefused

        c: Context = ctx.obj
        settings = c.settings
        if settings.database_url is None and not (settings.data_dir / "paperfeed.db").exists():
            raise fail(f"nothing to copy: {settings.data_dir / 'paperfeed.db'} does not exist")
        started = time.monotonic()
        bars = Progress(
            TextColumn("[bold]{task.description:>16}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=c.err,
            disable=not c.err.is_terminal,
        )
        tasks: dict[str, TaskID] = {}

        def progress(table: str, done: int, total: int) -> None:
            if table not in tasks:
                tasks[table] = bars.add_task(table, total=total)
            bars.update(tasks[table], completed=done, total=total)

        store = c.app.maintenance.store
        try:
            with bars:
                where, summary = store.copy_to(
                    to, current=settings.db_url, batch_size=batch_size, progress=progress, restart=restart
                )
            index_note = _build_indexes(settings, store.canonical_url(to))
        except CopyRefused as exc:
            raise fail(str(exc)) from None
        except InvalidDatabaseUrl as exc:
            raise fail(f"--to: {exc}") from None
        except StoreError as exc:
            raise fail(str(exc), 3) from None
        table = Table(title=f"copied to {where}", show_header=True, header_style="bold")
        table.add_column("table")
        table.add_column("rows written", justify="right")
        for name, rows in summary.tables.items():
            table.add_row(name + (" (resumed)" if name in summary.resumed else ""), f"{rows:,}")
        print_table(c.console, table)
        if summary.missing:
            c.console.print(f"not in the source (left empty): {', '.join(summary.missing)}", highlight=False)
        c.console.print(index_note, highlight=False)
        c.console.print(f"done in {time.monotonic() - started:,.1f} s", highlight=False)


def _build_indexes(settings: SettingsModel, target_url: str) -> str:
    """Keyword search follows by itself on PostgreSQL (a trigger); the vector index is built from the
    copied embeddings, as ``paperfeed index`` would, without embedding anything."""
    from paperfeed.bootstrap import build_app
    from paperfeed.domain.search import VectorIndexError

    app = build_app(settings.model_copy(update={"database_url": target_url}))
    try:
        if not app.maintenance.store.is_postgresql():
            return "indexes: run `paperfeed index` against the new database to build its vector index"
        indexing = app.indexes.indexer.current()
        model = indexing.embedder.model_id
        if not indexing.stored_vectors():
            return f"vector index: no copied vectors of {model}; `paperfeed index` will embed the papers"
        sync = indexing.sync_index(full=True)
        vectors = count(sync.size, "vector")
        return f"vector index: {vectors} of {model} (pgvector HNSW); keyword index: built on copy"
    except VectorIndexError as exc:
        return f"vector index not built: {exc}"
    finally:
        app.close()
