"""The ``paperfeed`` command: parses flags, calls services, turns their errors into one clean line.

Exit codes: 0 success; 1 some records were rejected (the rest imported; ``--keep-going`` makes it 0);
2 bad usage or input that could not be read at all; 3 a source could not be reached.
"""

from __future__ import annotations

import importlib
import os
import sys
from difflib import get_close_matches
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from typer.core import TyperGroup

from .context import Context

if TYPE_CHECKING:
    from typer import _click

__all__ = ["cli_app", "main"]

# Every command: the module that defines it, and its help's first paragraph (what `paperfeed --help`
# lists). A command's module is imported, and its click command built, only when that command runs or
# shows its own help, so `paperfeed --help` and each command load one module, not all twenty;
# tests/test_cli_startup.py checks that each summary is the real command's.
COMMANDS: dict[str, tuple[str, str]] = {
    "import": ("imports", "Import papers from files. Re-importing the same file changes nothing."),
    "migrate": (
        "migrate",
        "Upgrade the database schema (every command does it on open; run it once before starting "
        "several workers on one PostgreSQL database).",
    ),
    "copy": (
        "copy",
        "Copy the whole store (papers, listings, embeddings, accounts, everything) into another "
        "database, then build its search indexes. Safe to interrupt and to repeat: a re-run resumes "
        "and never duplicates.",
    ),
    "check": (
        "check",
        "Verify that the keyword and vector indexes hold every paper of the store exactly once, current.",
    ),
    "backup": (
        "backup",
        "Back up the database (a consistent snapshot, safe while the server runs) and the secret key.",
    ),
    "restore": (
        "backup",
        "Restore a backup into the data folder, then rebuild the keyword, vector and sentence indexes.",
    ),
    "stats": (
        "stats",
        "Show how many papers and listings the store holds, and from which sources; how many papers have "
        "a vector for meaning search (per embedding model), and when topics were built and how many.",
    ),
    "index": (
        "index",
        "Embed papers whose vector is missing or stale. Safe to interrupt: a re-run resumes.",
    ),
    "fetch": (
        "fetch",
        "Fetch papers by id from the arXiv API (100 ids per request) and store them.",
    ),
    "run": (
        "run",
        "Bring paperfeed up: import FILES, refresh from the sources when reachable, then run the web "
        "server, the scheduler and the background indexer as one supervised unit (one Ctrl+C stops "
        "all).",
    ),
    "search": (
        "search",
        "Search papers by meaning and by words (hybrid: BM25 + embeddings).",
    ),
    "similar": (
        "search",
        "Papers most similar to one paper: its text neighbours, fused with its citation graph where it has "
        "links (each saying why); with --facet, by background, method or result.",
    ),
    "evidence": (
        "evidence",
        "The sentences of the papers' abstracts that bear on a question or claim, each quoted verbatim "
        "with its role and the sentences around it, grouped under its paper (not generated, no verdict).",
    ),
    "mcp": (
        "mcp",
        "Serve paperfeed's MCP tools (search, papers, feeds, library) over stdio (docs/mcp.md).",
    ),
    "serve": (
        "serve",
        "Serve the web pages, the JSON API (docs at /docs) and the RSS/Atom feeds.",
    ),
    "scheduler": (
        "jobs",
        "Run the jobs at their times (PAPERFEED_JOBS_*_AT), one scheduler at a time. Not in web workers.",
    ),
    "users": (
        "users",
        "Add people, list them, make or unmake administrators, hide or show accounts, export or delete "
        "their data.",
    ),
    "papers": (
        "users",
        "Hide papers from feeds, search, the API and pages, or show them again.",
    ),
    "citations": (
        "citations",
        "Import citations in bulk: pairs of ids (TSV, CSV, JSONL), Semantic Scholar Datasets, OpenAlex "
        "works snapshots.",
    ),
    "harvest": (
        "harvest",
        "Harvest papers from arXiv (OAI-PMH), Hugging Face Daily Papers, or fill the recent window; "
        "harvest citations from Semantic Scholar and OpenAlex.",
    ),
    "digest": ("digest", "Email digests: preview one, send the due ones, see the ledger."),
    "mail": (
        "mail",
        "Mail kept in the outbox when no mail server is set (PAPERFEED_SMTP_HOST): list it with its links.",
    ),
    "jobs": ("jobs", "The daily pipeline (papers, citations, index, topics, digests) and its run records."),
    "library": (
        "library",
        "A reader's library: import papers from BibTeX, RIS, CSL-JSON or a list of arXiv ids; export it.",
    ),
    "model": (
        "model",
        "Fine-tune the embedding model on this instance's papers (adapt), see (status) or undo (reset) it.",
    ),
    "topics": (
        "topics",
        "Topics of the papers: build them (a full rebuild that keeps surviving ids), place new papers "
        "into them (daily), list them.",
    ),
}


def load_commands(module: str) -> dict[str, _click.Command]:
    """The click commands one CLI module defines, built as the root would build them."""
    mod = importlib.import_module(f"{__name__}.{module}")
    holder = typer.Typer(add_completion=False, rich_markup_mode=None)
    if hasattr(mod, "register"):  # plain commands (and the groups jobs and users add themselves)
        mod.register(holder)
    else:  # a module that is one command group: harvest_app, digest_app, library_app, model_app
        holder.add_typer(getattr(mod, f"{module}_app"), name=module)
    return dict(typer.main.get_group(holder).commands)


# The root's own options that take a value: accepted after the command too (`paperfeed search … --data-dir
# D`), where a person naturally types them; see hoist_global_options.
GLOBAL_OPTIONS = ("--data-dir", "--database-url")


def hoist_global_options(args: list[str]) -> list[str]:
    """``args`` with every root option that comes after the command name moved to just before it, so the
    root parses it (a later one wins over an earlier one, as click does). Nothing after ``--`` moves: it
    is an argument then, not an option."""
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "--":  # the root's own, in front
        i += 2 if args[i] in GLOBAL_OPTIONS else 1
    if i >= len(args):
        return args
    head, rest = args[:i], args[i:]
    hoisted: list[str] = []
    kept: list[str] = []
    j = 0
    while j < len(rest):
        arg = rest[j]
        if arg == "--":
            kept.extend(rest[j:])
            break
        if arg in GLOBAL_OPTIONS and j + 1 < len(rest):
            hoisted += rest[j : j + 2]
            j += 2
            continue
        if arg.startswith(tuple(f"{name}=" for name in GLOBAL_OPTIONS)):
            hoisted.append(arg)
        else:
            kept.append(arg)
        j += 1
    return [*head, *hoisted, *kept]


class _LazyRoot(TyperGroup):
    """The root group, loading a command's module only when that command is looked up (click's
    documented lazy-loading pattern); its own ``--help`` lists the summaries from COMMANDS."""

    def parse_args(self, ctx: _click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_global_options(args))

    def list_commands(self, ctx: _click.Context) -> list[str]:
        return [*self.commands, *(name for name in COMMANDS if name not in self.commands)]

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands.update(load_commands(COMMANDS[cmd_name][0]))
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: _click.Context, args: list[str]
    ) -> tuple[str | None, _click.Command | None, list[str]]:
        """typer suggests close names from the commands already built; here that is none yet."""
        from typer._click.exceptions import UsageError

        try:
            return super().resolve_command(ctx, args)
        except UsageError as exc:
            matches = get_close_matches(args[0], list(COMMANDS)) if args else []
            if matches and "Did you mean" not in exc.message:
                exc.message = f"{exc.message.rstrip('.')}. Did you mean {', '.join(map(repr, matches))}?"
            raise

    def format_commands(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        from typer._click.utils import make_default_short_help

        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [(name, make_default_short_help(COMMANDS[name][1], limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


# The typer root (not "app": that is bootstrap's App, and the web's create_app makes a FastAPI app).
# Plain click help (rich_markup_mode=None): rich's help renderer alone costs more than the whole
# start-up budget of `paperfeed --help` (docs/cli.md, "Start-up time").
cli_app = typer.Typer(
    name="paperfeed",
    cls=_LazyRoot,
    help="Self-hosted research-paper discovery: ingest, search, feeds and digests.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@cli_app.callback()
def _root(
    ctx: typer.Context,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            envvar="PAPERFEED_DATA_DIR",
            help="Data folder (default ~/.local/share/paperfeed). It and --database-url may also follow "
            "the command.",
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


def main() -> None:
    try:
        cli_app()
    except KeyboardInterrupt:
        sys.stderr.write(
            "interrupted; everything committed so far is kept, run the command again to resume\n"
        )
        sys.exit(130)
