"""The ``paperfeed`` command: parses flags, calls services, turns their errors into one clean line.

Exit codes: 0 success; 1 some records were rejected (the rest imported; ``--keep-going`` makes it 0);
2 bad usage or input that could not be read at all; 3 a source could not be reached.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from . import (
    backup,
    check,
    copy,
    digest,
    fetch,
    harvest,
    imports,
    index,
    jobs,
    library,
    migrate,
    run,
    search,
    serve,
    stats,
    users,
)
from .context import Context

__all__ = ["app", "main"]

app = typer.Typer(
    name="paperfeed",
    help="Self-hosted research-paper discovery: ingest, search, feeds and digests.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(
    ctx: typer.Context,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir", envvar="PAPERFEED_DATA_DIR", help="Data folder (default ~/.local/share/paperfeed)."
        ),
    ] = None,
    database_url: Annotated[
        str | None,
        typer.Option("--database-url", envvar="PAPERFEED_DATABASE_URL", help="SQLAlchemy database URL."),
    ] = None,
) -> None:
    ctx.obj = Context(data_dir=data_dir, database_url=database_url)
    ctx.call_on_close(ctx.obj.close)


imports.register(app)
migrate.register(app)
copy.register(app)
check.register(app)
backup.register(app)
stats.register(app)
index.register(app)
fetch.register(app)
run.register(app)
search.register(app)
serve.register(app)
users.register(app)
app.add_typer(harvest.harvest_app, name="harvest")
app.add_typer(digest.digest_app, name="digest")
jobs.register(app)
app.add_typer(library.library_app, name="library")


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write(
            "interrupted; everything committed so far is kept, run the command again to resume\n"
        )
        sys.exit(130)
