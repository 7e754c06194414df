"""The outgoing-mail port: what services hand to a mailer, and the ways a send can fail.

Accounts (verification, sign-in links, password resets) and digests both send mail through this one
port; the SMTP adapter in ``paperfeed.adapters.mail`` implements it.

A :class:`SessionMailer` (every mailer paperfeed ships is one) also opens a :class:`MailSession`: one
reused connection for many messages, with a hook called just before a message is finally handed over
(the SMTP end-of-data dot). The digest sender uses that hook to record "the server may have it now" in its
ledger, which is what lets a crashed run be resumed without sending anything twice (docs/digests.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

__all__ = [
    "InlineImage",
    "KeptMail",
    "MailDeliveryUnknown",
    "MailError",
    "MailPermanentError",
    "MailServerError",
    "MailSession",
    "MailTemporaryError",
    "Mailer",
    "OutgoingMail",
    "SessionMailer",
]


@dataclass(frozen=True, slots=True)
class InlineImage:
    """An image the HTML part shows as ``<img src="cid:{cid}">`` (sent in a multipart/related part:
    mail clients block remote images and most do not show SVG, so plots travel inside the message)."""

    cid: str  # the Content-ID without its angle brackets, e.g. "rising-1.42@papers.example.org"
    data: bytes
    subtype: str = "png"
    filename: str = "image.png"


@dataclass(frozen=True, slots=True)
class OutgoingMail:
    """One message to one recipient: plain text always, HTML optionally (sent as multipart/alternative).

    ``headers`` are added as they are (``List-Unsubscribe``, ``Message-ID``…); ``From``, ``To``,
    ``Subject`` and ``Date`` come from the mailer and the fields above. ``images`` go with the HTML part
    (ignored without one).
    """

    to: str
    subject: str
    text: str
    html: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    images: tuple[InlineImage, ...] = ()


@dataclass(frozen=True, slots=True)
class KeptMail:
    """A message the outbox kept instead of sending (no ``PAPERFEED_SMTP_HOST``), as read back for its
    administrator (``paperfeed mail outbox``): ``links`` are the web links of its text, decoded (the file
    is quoted-printable, so a link copied from it as it stands is wrong)."""

    file: str
    date: datetime | None
    to: str
    subject: str
    links: tuple[str, ...]


class MailError(Exception):
    """A message could not be handed to the mail server."""


class MailTemporaryError(MailError):
    """Worth retrying later: a 4xx reply, a timeout, a dropped connection."""


class MailServerError(MailTemporaryError):
    """The server refuses *us*, not this recipient (authentication, TLS, our sender address, an
    unreachable host): no recipient is at fault, and retrying helps once the configuration is fixed."""


class MailDeliveryUnknown(MailTemporaryError):
    """The connection failed after the message was handed over (no reply to the SMTP end-of-data dot):
    the server may or may not have it. Retrying risks a duplicate; not retrying risks a loss."""


class MailPermanentError(MailError):
    """Retrying will not help: a 5xx reply for this recipient (the address bounces)."""


@runtime_checkable
class Mailer(Protocol):
    """Hands messages to a mail server. ``send_many`` may reuse one connection for all of them."""

    def send(self, mail: OutgoingMail) -> None:
        """Send one message or raise :class:`MailTemporaryError` / :class:`MailPermanentError`."""
        ...

    def send_many(self, mails: Sequence[OutgoingMail]) -> list[MailError | None]:
        """Send each message; the result holds, per message, ``None`` when sent or the error it met."""
        ...


class MailSession(Protocol):
    """An open connection to the mail server, reused for every message sent through it."""

    def send(self, mail: OutgoingMail, *, on_handover: Callable[[], None] | None = None) -> None:
        """Send one message. ``on_handover`` runs after everything up to the final step succeeded and just
        before the message is irrevocably handed over (SMTP: before the end-of-data dot is written): when
        it has not run, the server certainly does not have the message. Raises like :meth:`Mailer.send`.
        """
        ...


@runtime_checkable
class SessionMailer(Mailer, Protocol):
    """A mailer that can also open a reusable :class:`MailSession`."""

    def session(self) -> AbstractContextManager[MailSession]:
        """Open a session (lazily connected; closed, with QUIT, when the block ends)."""
        ...
