"""The outgoing-mail port: what services hand to a mailer, and the two ways a send can fail.

Accounts (verification, sign-in links, password resets) and digests both send mail through this one
port; the SMTP adapter in ``paperfeed.adapters.mail`` implements it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

__all__ = ["MailError", "MailPermanentError", "MailTemporaryError", "Mailer", "OutgoingMail"]


@dataclass(frozen=True, slots=True)
class OutgoingMail:
    """One message to one recipient: plain text always, HTML optionally (sent as multipart/alternative)."""

    to: str
    subject: str
    text: str
    html: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


class MailError(Exception):
    """A message could not be handed to the mail server."""


class MailTemporaryError(MailError):
    """Worth retrying later: a 4xx reply, a timeout, a dropped connection."""


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
