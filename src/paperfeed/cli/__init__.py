"""The ``paperfeed`` command: parses flags, calls services, turns their errors into one clean line.

Exit codes: 0 success; 1 some records were rejected (the rest imported; ``--keep-going`` makes it 0);
2 bad usage or input that could not be read at all; 3 a source could not be reached.
"""

from __future__ import annotations

import os
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
    mcp,
    migrate,
    model,
    run,
    search,
    serve,
    stats,
    topics,
    users,
)
from .context import Context

__all__ = ["cli_app", "main"]

# The typer root (not "app": that is bootstrap's App, and the web's create_app makes a FastAPI app).
cli_app = typer.Typer(
    name="paperfeed",
    help="Self-hosted research-paper discovery: ingest, search, feeds and digests.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@cli_app.callback()
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
    if os.environ.get("PAPERFEED_SUPERVISOR_PID"):  # a child of `paperfeed run`: end when it ends
        from .supervisor import follow_parent

        follow_parent()
    ctx.obj = Context(data_dir=data_dir, database_url=database_url)
    ctx.call_on_close(ctx.obj.close)


imports.register(cli_app)
migrate.register(cli_app)
copy.register(cli_app)
check.register(cli_app)
backup.register(cli_app)
stats.register(cli_app)
index.register(cli_app)
fetch.register(cli_app)
run.register(cli_app)
search.register(cli_app)
mcp.register(cli_app)
serve.register(cli_app)
users.register(cli_app)
cli_app.add_typer(harvest.harvest_app, name="harvest")
cli_app.add_typer(digest.digest_app, name="digest")
jobs.register(cli_app)
cli_app.add_typer(library.library_app, name="library")
cli_app.add_typer(model.model_app, name="model")
cli_app.add_typer(topics.topics_app, name="topics")


def main() -> None:
    try:
        cli_app()
    except KeyboardInterrupt:
        sys.stderr.write(
            "interrupted; everything committed so far is kept, run the command again to resume\n"
        )
        sys.exit(130)
