"""``paperfeed mail outbox``: the mail an instance without a mail server kept, with its links decoded.

Without ``PAPERFEED_SMTP_HOST`` every message (sign-up confirmations, sign-in links, password resets,
digests) is written as an ``.eml`` file to ``<data_dir>/outbox`` instead of being sent. Those files are
quoted-printable, so a link copied out of one as it stands is wrong (``=3D`` for ``=``, lines cut with
``=``); this lists each message with its links as they work. The web pages say that the administrator
finds the message here; they never show a link themselves.
"""

from __future__ import annotations

from typing import Annotated

import orjson
import typer

from .context import Context, fail

__all__ = ["mail_app"]

mail_app = typer.Typer(
    help="Mail kept in the outbox when no mail server is set (PAPERFEED_SMTP_HOST): list it with its links.",
    no_args_is_help=True,
)


@mail_app.command("outbox")
def outbox(
    ctx: typer.Context,
    to: Annotated[str | None, typer.Option("--to", help="Only the messages to this address.")] = None,
    last: Annotated[
        int | None, typer.Option("--last", min=1, help="Only the newest N messages (after --to).")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON lines (one object per message) instead of text.")
    ] = False,
) -> None:
    """List the kept messages, oldest first: date, recipient, subject and their links, decoded so they
    work when opened (the .eml files are quoted-printable)."""
    c: Context = ctx.obj
    app = c.app
    kept = app.mail.kept_mail()
    if to is not None:
        from paperfeed.domain.accounts import AccountError, normalize_email

        try:
            wanted = normalize_email(to)
        except AccountError as exc:
            raise fail(f"--to {to.strip()[:100]!r}: {exc}") from None
        kept = [m for m in kept if m.to.strip().lower() == wanted]
    if last is not None:
        kept = kept[-last:]
    if as_json:
        for m in kept:
            row = {
                "date": m.date.isoformat() if m.date else None,
                "to": m.to,
                "subject": m.subject,
                "links": list(m.links),
                "file": m.file,
            }
            typer.echo(orjson.dumps(row).decode())
        return
    if not app.mail.kept:
        c.err.print(
            f"mail is sent through {app.settings.smtp_host}; this outbox only holds what was kept before "
            "PAPERFEED_SMTP_HOST was set",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    if not kept:
        where = f" to {to.strip()}" if to is not None else ""
        c.err.print(
            f"no kept mail{where} in {app.mail.outbox_folder}", highlight=False, markup=False, soft_wrap=True
        )
        return
    for m in kept:  # plain lines: a link must never be wrapped or marked up
        when = f"{m.date:%Y-%m-%d %H:%M:%S} UTC" if m.date else "(no date)"
        typer.echo(f"{when}  to {m.to}  {m.subject}")
        for link in m.links:
            typer.echo(f"  {link}")
