"""The mailer used when no SMTP server is configured: every message becomes an ``.eml`` file in a folder.

Nothing is ever dropped silently. An instance without ``PAPERFEED_SMTP_HOST`` writes each message to
``<data_dir>/outbox/`` (readable with any mail client, or ``cat``) and logs where, so a self-hoster can
try digests and sign-in links before setting up mail. :func:`read_outbox` reads the folder back for
``paperfeed mail outbox``: date, recipient, subject and the links, decoded from quoted-printable.
"""

from __future__ import annotations

import email
import email.policy
import html
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import parsedate_to_datetime
from pathlib import Path

from paperfeed.domain.mail import KeptMail, MailError, MailTemporaryError, OutgoingMail

from .message import build_message, to_bytes

__all__ = ["OutboxMailer", "read_outbox"]

log = logging.getLogger("paperfeed.mail")
_UNSAFE = re.compile(r"[^A-Za-z0-9@._+-]+")
_TEXT_LINK = re.compile(r"https?://[^\s<>\"']+")
_HREF = re.compile(r"""href\s*=\s*["']([^"']+)["']""", re.IGNORECASE)


class OutboxMailer:
    """:class:`~paperfeed.domain.mail.SessionMailer` that writes ``.eml`` files (atomically) to ``folder``."""

    def __init__(self, folder: Path, sender: str) -> None:
        self.folder = folder
        self.sender = sender
        self._lock = threading.Lock()
        self._count = 0
        self._warned = False

    def _write(self, mail: OutgoingMail, on_handover: Callable[[], None] | None) -> Path:
        data = to_bytes(build_message(mail, self.sender), utf8=True, linesep="\n")
        with self._lock:
            self._count += 1
            serial = self._count
            if not self._warned:
                self._warned = True
                log.warning(
                    "no SMTP server configured (PAPERFEED_SMTP_HOST): mail is written to %s", self.folder
                )
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        name = f"{stamp}-{os.getpid()}-{serial}-{_UNSAFE.sub('_', mail.to)[:80]}.eml"
        target = self.folder / name
        partial = self.folder / f".{name}.part"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            partial.write_bytes(data)
            if on_handover is not None:
                on_handover()
            os.replace(partial, target)
        except OSError as exc:
            raise MailTemporaryError(f"cannot write {target}: {exc}") from None
        log.info("mail to %s written to %s", mail.to, target)
        return target

    @contextmanager
    def session(self) -> Iterator[_OutboxSession]:
        yield _OutboxSession(self)

    def send(self, mail: OutgoingMail) -> None:
        self._write(mail, None)

    def send_many(self, mails: Sequence[OutgoingMail]) -> list[MailError | None]:
        results: list[MailError | None] = []
        for mail in mails:
            try:
                self._write(mail, None)
            except MailError as exc:
                results.append(exc)
            else:
                results.append(None)
        return results

    def describe(self) -> str:
        return f"no SMTP server: .eml files in {self.folder}"


class _OutboxSession:
    def __init__(self, mailer: OutboxMailer) -> None:
        self._mailer = mailer

    def send(self, mail: OutgoingMail, *, on_handover: Callable[[], None] | None = None) -> None:
        self._mailer._write(mail, on_handover)


def read_outbox(folder: Path) -> list[KeptMail]:
    """The ``.eml`` files of ``folder``, oldest first (their names start with the time written); a file
    that disappears while being read is left out. No folder: nothing kept yet."""
    try:
        paths = sorted(p for p in folder.iterdir() if p.suffix == ".eml" and p.is_file())
    except FileNotFoundError:
        return []
    kept: list[KeptMail] = []
    for path in paths:
        try:
            with path.open("rb") as fh:
                message = email.message_from_binary_file(fh, policy=email.policy.default)
        except FileNotFoundError:
            continue
        assert isinstance(message, EmailMessage)  # the default policy's factory
        kept.append(
            KeptMail(
                file=str(path),
                date=_date(message, path),
                to=str(message.get("To", "")),
                subject=str(message.get("Subject", "")),
                links=_links(message),
            )
        )
    return kept


def _date(message: EmailMessage, path: Path) -> datetime | None:
    value = message.get("Date")
    if value:
        try:
            return parsedate_to_datetime(str(value)).astimezone(UTC)
        except (TypeError, ValueError):
            pass
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError:
        return None


def _links(message: EmailMessage) -> tuple[str, ...]:
    """The links of the plain-text body (decoded by the email package: quoted-printable ``=3D`` is ``=``
    again, soft line breaks are joined), else the HTML body's ``href``s; each once, in order."""
    found: list[str] = []
    plain = message.get_body(preferencelist=("plain",))
    if isinstance(plain, EmailMessage):
        found = [url.rstrip(".,;:!?)]") for url in _TEXT_LINK.findall(plain.get_content())]
    if not found:
        rich = message.get_body(preferencelist=("html",))
        if isinstance(rich, EmailMessage):
            found = [html.unescape(url) for url in _HREF.findall(rich.get_content())]
            found = [url for url in found if url.startswith(("http://", "https://"))]
    return tuple(dict.fromkeys(found))
