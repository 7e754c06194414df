"""``paperfeed users …`` and ``paperfeed papers …``: roles and moderation from the server's shell.

Roles are set here, not on a web page, so that taking over one admin session is not enough to make
more admins.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.markup import escape
from rich.table import Table

from paperfeed.domain.accounts import AccountError, AccountExists, NotFound
from paperfeed.domain.ids import InvalidPaperId, normalize_paper_id
from paperfeed.domain.wording import count

from .context import Context, fail
from .tables import print_table

__all__ = ["papers_app", "users_app"]

users_app = typer.Typer(
    help="Add people, list them, make or unmake administrators, hide or show accounts, export or delete "
    "their data."
)
papers_app = typer.Typer(help="Hide papers from feeds, search, the API and pages, or show them again.")


def _set_role(ctx: typer.Context, email: str, role: str) -> None:
    c: Context = ctx.obj
    try:
        user = c.app.readers.accounts.set_role(email, role)
    except AccountError as exc:
        raise fail(str(exc)) from None
    c.console.print(
        f"{escape(user.email)} is now {'an admin' if role == 'admin' else 'a user'}", highlight=False
    )


def _new_password(email: str, from_stdin: bool) -> str:
    """The password for ``users add``: the first line of stdin, or asked twice on the terminal."""
    if from_stdin:
        line = sys.stdin.readline().rstrip("\r\n")
        if not line:
            raise fail("--password-stdin: stdin held no password (one line is read); nothing was created")
        return line
    if not sys.stdin.isatty():
        raise fail(
            "there is no terminal to ask the password on: give it on stdin with --password-stdin, "
            "or use --link for a one-time sign-in link; nothing was created"
        )
    import getpass

    first = getpass.getpass(f"Password for {email}: ")
    if getpass.getpass("The same password again: ") != first:
        raise fail("the two passwords differ; nothing was created")
    return first


@users_app.command("add")
def add_user(
    ctx: typer.Context,
    email: Annotated[str, typer.Argument(help="The new account's email address.")],
    admin: Annotated[bool, typer.Option("--admin", help="Make it an administrator.")] = False,
    link: Annotated[
        bool,
        typer.Option(
            "--link", help="Set no password: print a one-time sign-in link (it works for 15 minutes)."
        ),
    ] = False,
    password_stdin: Annotated[
        bool,
        typer.Option(
            "--password-stdin",
            help="Read the password from the first line of stdin (scripts) instead of asking twice.",
        ),
    ] = False,
    name: Annotated[str | None, typer.Option("--name", help="Display name (optional).")] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            help="Where --link points (default: PAPERFEED_BASE_URL, else where a running paperfeed run on "
            "this data folder serves, else PAPERFEED_HOST:PAPERFEED_PORT).",
        ),
    ] = None,
) -> None:
    """Create a confirmed account from the server's shell (no mail needed). The password is asked twice
    on the terminal, read from stdin with --password-stdin, or --link prints a one-time sign-in link.
    Exit code 1 if the address already has an account (nothing changes), 2 for bad input."""
    c: Context = ctx.obj
    if link and password_stdin:
        raise fail("--link sets no password and --password-stdin reads one: choose one")
    accounts = c.app.readers.accounts
    try:  # said before a password is typed for nothing
        address = accounts.check_address_free(email)
    except AccountExists as exc:
        hint = ""
        if exc.state == "unconfirmed" and c.app.mail.kept:  # signed up on a site that mails nothing
            hint = f" Its confirmation link is in the outbox: paperfeed mail outbox --to {email.strip()}"
        raise fail(f"{exc}{hint}", code=1) from None
    except AccountError as exc:
        raise fail(f"{email.strip()[:100]!r}: {exc}") from None
    password = None if link else _new_password(address, password_stdin)
    try:
        user = accounts.add_confirmed(address, password, display_name=name, role="admin" if admin else "user")
    except AccountExists as exc:
        raise fail(str(exc), code=1) from None
    except AccountError as exc:
        raise fail(f"{exc} Nothing was created.") from None
    kind = "an administrator" if user.is_admin else "a reader"
    site = (base_url or c.app.core.public_url).rstrip("/")
    if not link:
        c.console.print(
            f"created {escape(user.email)}, {kind}, confirmed: sign in at {escape(site)}/signin",
            highlight=False,
            soft_wrap=True,
        )
        return
    url = accounts.sign_in_link(user, site)
    c.console.print(
        f"created {escape(user.email)}, {kind}, confirmed, with no password. "
        "One-time sign-in link (works once, for 15 minutes; a password can be set on the account page):",
        highlight=False,
        soft_wrap=True,
    )
    typer.echo(url)  # alone on its line, never wrapped: it is copied


@users_app.command("list")
def list_users(
    ctx: typer.Context,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON lines (one object per account) instead of a table.")
    ] = False,
) -> None:
    """Every account: id, email, name, role, state, sessions and API tokens."""
    c: Context = ctx.obj
    users = c.app.readers.accounts.list_users()
    if as_json:
        rows = [
            {
                "id": u.user.id,
                "email": u.user.email,
                "displayName": u.user.display_name,
                "role": u.user.role,
                "emailVerified": u.user.email_verified,
                "hidden": u.hidden,
                "createdAt": u.created_at.isoformat(),
                "sessions": u.sessions,
                "tokens": u.tokens,
            }
            for u in users
        ]
        for row in rows:
            typer.echo(orjson.dumps(row).decode())
        return
    if not users:
        c.console.print("no accounts yet: people sign up at /signup")
        return
    table = Table(title=f"{len(users)} account{'s' if len(users) != 1 else ''}")
    for column in ("id", "email", "name", "role", "state", "sessions", "tokens"):
        table.add_column(column)
    for u in users:
        state = "hidden" if u.hidden else ("active" if u.user.email_verified else "unconfirmed")
        table.add_row(
            str(u.user.id),
            escape(u.user.email),
            escape(u.user.display_name or ""),
            u.user.role,
            state,
            str(u.sessions),
            str(u.tokens),
        )
    print_table(c.console, table)


@users_app.command("promote")
def promote(ctx: typer.Context, email: Annotated[str, typer.Argument(help="The account's email.")]) -> None:
    """Make an account an administrator (can hide papers and people)."""
    _set_role(ctx, email, "admin")


@users_app.command("demote")
def demote(ctx: typer.Context, email: Annotated[str, typer.Argument(help="The account's email.")]) -> None:
    """Make an administrator an ordinary user again."""
    _set_role(ctx, email, "user")


@users_app.command("hide")
def hide_user(ctx: typer.Context, email: Annotated[str, typer.Argument(help="The account's email.")]) -> None:
    """Hide an account: signed out everywhere, tokens stop working, cannot sign in."""
    c: Context = ctx.obj
    try:
        user = c.app.readers.accounts.hide_user(c.app.readers.accounts.user_by_email(email).id)
    except AccountError as exc:
        raise fail(str(exc)) from None
    c.console.print(f"{escape(user.email)} is hidden and signed out everywhere", highlight=False)


@users_app.command("unhide")
def unhide_user(
    ctx: typer.Context, email: Annotated[str, typer.Argument(help="The account's email.")]
) -> None:
    """Let a hidden account sign in again."""
    c: Context = ctx.obj
    try:
        user = c.app.readers.accounts.unhide_user(c.app.readers.accounts.user_by_email(email).id)
    except AccountError as exc:
        raise fail(str(exc)) from None
    c.console.print(f"{escape(user.email)} can sign in again", highlight=False)


@users_app.command("export")
def export_user(
    ctx: typer.Context,
    email: Annotated[str, typer.Argument(help="The account's email.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="The zip to write (default: its usual name, here).")
    ] = None,
) -> None:
    """Write everything kept about an account as the zip the reader gets from their account page."""
    c: Context = ctx.obj
    try:
        archive = c.app.readers.account_data.export(c.app.readers.accounts.user_by_email(email))
    except AccountError as exc:
        raise fail(str(exc)) from None
    target = output or Path(archive.filename)
    try:
        c.app.core.write_private_file(target, archive.content)  # 0600: addresses, notes, everything of theirs
    except OSError as exc:
        raise fail(f"{target}: cannot write: {exc.strerror or exc}") from None
    c.console.print(f"wrote {escape(str(target))} ({count(len(archive.content), 'byte')})", highlight=False)


@users_app.command("delete")
def delete_user(
    ctx: typer.Context,
    email: Annotated[str, typer.Argument(help="The account's email.")],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete an account and everything of it (library, notes, comments, upvotes, digest subscription,
    sessions, tokens) at once and for good; papers it put on the daily feed stay listed."""
    c: Context = ctx.obj
    try:
        user = c.app.readers.accounts.user_by_email(email)
    except AccountError as exc:
        raise fail(str(exc)) from None
    if not yes and not typer.confirm(f"Delete {user.email} and all its data for good?", default=False):
        raise fail("nothing deleted")
    try:
        deleted = c.app.readers.account_data.delete_user(user.id)
    except AccountError as exc:
        raise fail(str(exc)) from None
    c.console.print(
        f"{escape(user.email)} is deleted ({count(deleted.total, 'row')} removed or detached)",
        highlight=False,
    )


def _paper_id(text: str) -> str:
    try:
        return normalize_paper_id(text).base
    except InvalidPaperId as exc:
        raise fail(f"{text!r} is not a paper id: {exc}") from None


@papers_app.command("hide")
def hide_paper(
    ctx: typer.Context,
    paper_id: Annotated[str, typer.Argument(help="arXiv id such as 2503.10613.")],
    reason: Annotated[str, typer.Option(help="Why (shown to administrators).")] = "",
) -> None:
    """Hide a paper from feeds, search, the API and its page."""
    c: Context = ctx.obj
    pid = _paper_id(paper_id)
    try:
        changed = c.app.readers.accounts.hide_paper(pid, reason=reason)
    except NotFound as exc:
        raise fail(str(exc)) from None
    c.console.print(f"{pid} {'is now hidden' if changed else 'was already hidden'}", highlight=False)


@papers_app.command("unhide")
def unhide_paper(
    ctx: typer.Context, paper_id: Annotated[str, typer.Argument(help="arXiv id such as 2503.10613.")]
) -> None:
    """Show a hidden paper again."""
    c: Context = ctx.obj
    pid = _paper_id(paper_id)
    if not c.app.readers.accounts.unhide_paper(pid):
        raise fail(f"{pid} is not hidden")
    c.console.print(f"{pid} is shown again", highlight=False)


@papers_app.command("hidden")
def hidden_papers(ctx: typer.Context) -> None:
    """List hidden papers with when and why."""
    c: Context = ctx.obj
    hidden = c.app.readers.accounts.hidden_papers()
    if not hidden:
        c.console.print("no hidden papers")
        return
    for h in hidden:
        reason = f"  {escape(h.reason)}" if h.reason else ""
        c.console.print(f"{h.paper_id}  hidden {h.hidden_at:%Y-%m-%d %H:%M}{reason}", highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(users_app, name="users")
    app.add_typer(papers_app, name="papers")
