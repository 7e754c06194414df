"""The mailer used when no SMTP server is configured: every message becomes an ``.eml`` file in a folder.

Nothing is ever dropped silently. An instance without ``PAPERFEED_SMTP_HOST`` writes each message to
``<data_dir>/outbox/`` (readable with any mail client, or ``cat``) and logs where, so a self-hoster can
try digests and sign-in links before setting up mail.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from paperfeed.domain.mail import MailError, MailTemporaryError, OutgoingMail

from .message import build_message, to_bytes

__all__ = ["OutboxMailer"]

log = logging.getLogger("paperfeed.mail")
_UNSAFE = re.compile(r"[^A-Za-z0-9@._+-]+")


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
