"""``paperfeed digest preview|send|status``: look at a digest, send the due ones, see the send ledger.

Exit codes of ``digest send``: 0 done (bounces and retries are normal outcomes, counted in the output);
3 the mail server could not be reached or refused us (nothing more was sent; the rest stays pending for
the next run); 4 another process is sending digests right now.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from paperfeed.domain.wording import agree, count

from .context import Context, fail

__all__ = ["digest_app"]

digest_app = typer.Typer(
    help="Email digests: preview one, send the due ones, see the ledger.", no_args_is_help=True
)


def parse_now(value: str | None) -> datetime | None:
    """``--now``: an ISO time (``2025-03-20T09:00``, UTC unless it names an offset)."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise fail(f"--now: not an ISO date and time (e.g. 2025-03-20T09:00Z): {value[:40]!r}") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _use_clock(c: Context, now: datetime | None) -> None:
    if now is not None:
        c.app.digests.sender.clock = lambda: now
        c.app.digests.subscriptions.clock = lambda: now
        c.app.digests.groups.clock = lambda: now


def _base_url_note(c: Context) -> None:
    if not c.settings.base_url:
        c.err.print(
            "[yellow]note:[/] PAPERFEED_BASE_URL is not set: links in mail point to "
            f"{escape(c.app.core.public_url)}",
            highlight=False,
        )


NowOption = Annotated[
    str | None,
    typer.Option("--now", help="Act as if it were this time (ISO, UTC by default): for tests and catch-up."),
]


@digest_app.command("preview")
def preview(
    ctx: typer.Context,
    to: Annotated[
        str, typer.Option("--to", help="The subscriber's address (or any address: a default digest).")
    ],
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write here: .eml (the whole message), .html, or anything else for text."),
    ] = None,
    now: NowOption = None,
) -> None:
    """Render the digest an address would get now, without recording or sending anything."""
    from paperfeed.domain.digest import (
        InvalidPreferences,
        Preferences,
        Subscription,
        SubscriptionStatus,
        normalize_email,
    )

    c: Context = ctx.obj
    moment = parse_now(now)
    _use_clock(c, moment)
    try:
        email = normalize_email(to)
    except InvalidPreferences:
        raise fail(f"--to: not a mail address: {to[:80]!r}") from None
    sub = c.app.digests.subscriptions.by_email(email)
    if sub is None:
        c.err.print(f"{escape(email)} has no subscription: previewing the default digest (trending)")
        sub = Subscription(
            0, email, SubscriptionStatus.active, Preferences().checked(), None, datetime.now(UTC)
        )
    elif not sub.active:
        c.err.print(f"note: this subscription is {sub.status.value}: nothing would be sent to it")
    _base_url_note(c)
    result = c.app.digests.sender.preview(sub, mark=sub.id != 0)
    missing = [s.value for s in sub.preferences.sections if s in c.app.digests.sender.missing_sections()]
    if missing:
        c.err.print(f"note: sections not available on this instance: {', '.join(missing)}")
    if result.mail is None:
        c.console.print(f"nothing new for {escape(email)} in period {result.period}: no mail would be sent")
        return
    mail = result.mail
    if out is None:
        c.console.print(f"Subject: {mail.subject}\n", markup=False, highlight=False)
        c.console.print(mail.text, markup=False, highlight=False, soft_wrap=True)
        return
    if out.suffix.lower() == ".eml":
        data = c.app.mail.eml_bytes(mail)
    elif out.suffix.lower() in (".html", ".htm"):
        data = (mail.html or "").encode()
    else:
        data = f"Subject: {mail.subject}\n\n{mail.text}".encode()
    try:
        out.write_bytes(data)
    except OSError as exc:
        raise fail(f"cannot write {out}: {exc.strerror or exc}") from None
    papers = len(result.digest.paper_ids)
    c.console.print(f"wrote {out} ({count(papers, 'paper')}, period {result.period})", highlight=False)


@digest_app.command("send")
def send(
    ctx: typer.Context,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Compose and count the due digests; record and send nothing.")
    ] = False,
    now: NowOption = None,
) -> None:
    """Compose every due digest into the send ledger, then send every pending one (exactly once)."""
    from paperfeed.services.jobs import LeaseBusy

    c: Context = ctx.obj
    moment = parse_now(now)
    _use_clock(c, moment)
    _base_url_note(c)
    service = c.app.digests.sender
    c.err.print(f"mail: {escape(_describe(c))}", highlight=False)
    try:
        composed, sent = service.run(dry_run=dry_run)
    except LeaseBusy as exc:
        c.err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(4) from None
    verb = "would compose" if dry_run else "composed"
    c.console.print(
        f"{composed.subscriptions:,} active subscriptions, {composed.due:,} due: "
        f"{verb} {count(composed.composed, 'digest')} ({count(composed.papers, 'paper')}), "
        f"{composed.empty:,} with nothing new, "
        f"{composed.skipped_bouncing:,} bouncing addresses skipped ({composed.seconds:.2f} s)",
        highlight=False,
    )
    if composed.group_digests:
        c.console.print(f"{verb} {composed.group_digests:,} reading groups' weekly digests", highlight=False)
    for section, n in sorted(composed.missing_sections.items()):
        wants = agree(n, "wants", "want")
        c.err.print(f"note: {count(n, 'subscriber')} {wants} '{section}', which this instance cannot fill")
    if sent is None:
        return
    c.console.print(
        f"sent {sent.sent:,} in {sent.seconds:.2f} s ({sent.rate:,.1f}/s); retry later {sent.retry_later:,}, "
        f"failed {sent.failed:,}, bounced {sent.bounced:,}, delivery unknown {sent.unconfirmed:,}, "
        f"cancelled {sent.cancelled:,}",
        highlight=False,
    )
    if sent.recovered_pending or sent.recovered_unconfirmed:
        c.console.print(
            f"after an interrupted run: {count(sent.recovered_pending, 'digest')} resent (never handed "
            "over), "
            f"{sent.recovered_unconfirmed:,} not resent (already handed over)",
            highlight=False,
        )
    if sent.stopped:
        c.err.print(
            f"[bold red]error:[/] stopped: {escape(sent.stopped)}; "
            "unsent digests stay pending for the next run",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(3)


def _describe(c: Context) -> str:
    return c.app.mail.describe_mailer()


@digest_app.command("status")
def status(ctx: typer.Context) -> None:
    """Subscriptions and the send ledger by state."""
    c: Context = ctx.obj
    digests = c.app.digests
    subs = digests.subscriptions.counts()
    ledger = digests.sender.ledger_counts()
    c.console.print(
        "subscriptions: " + (", ".join(f"{k} {v:,}" for k, v in sorted(subs.items())) or "none"),
        highlight=False,
    )
    c.console.print(
        "digests: " + (", ".join(f"{k} {v:,}" for k, v in sorted(ledger.items())) or "none yet"),
        highlight=False,
    )
    retry = digests.sender.next_retry()
    if retry is not None:
        c.console.print(f"next retry: {retry:%Y-%m-%d %H:%M:%S} UTC", highlight=False)
    missing = [s.value for s in c.app.digests.sender.missing_sections()]
    if missing:
        c.console.print(f"sections this instance cannot fill: {', '.join(missing)}", highlight=False)
