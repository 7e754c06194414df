"""Turn an :class:`~paperfeed.domain.mail.OutgoingMail` into the MIME message every mailer sends."""

from __future__ import annotations

import email.policy
import email.utils
from email.message import EmailMessage
from email.utils import formataddr, parseaddr

from paperfeed.domain.mail import MailPermanentError, OutgoingMail

__all__ = ["build_message", "envelope_address", "to_bytes"]

# Headers the mailer owns; a caller's copy of one of them replaces ours, except these two.
_OWNED = {"from", "to"}


def envelope_address(sender: str) -> str:
    """The bare address of ``"Name <addr>"`` (the SMTP envelope wants no display name)."""
    _name, addr = parseaddr(sender)
    if not addr or "@" not in addr:
        raise ValueError(f"not a mail address: {sender!r}")
    return addr


def build_message(mail: OutgoingMail, sender: str) -> EmailMessage:
    """Plain text alone, or multipart/alternative text + HTML; quoted-printable, so 7-bit safe anywhere."""
    if "\r" in mail.to or "\n" in mail.to or "@" not in mail.to:
        raise MailPermanentError(f"not a mail address: {mail.to[:80]!r}")
    msg = EmailMessage(policy=email.policy.SMTP)
    name, addr = parseaddr(sender)
    msg["From"] = formataddr((name, addr)) if name else addr
    msg["To"] = mail.to
    msg["Subject"] = mail.subject
    msg["Date"] = email.utils.formatdate(localtime=False, usegmt=True)
    domain = addr.rpartition("@")[2] or "localhost"
    extra = {k: v for k, v in mail.headers.items() if k.lower() not in _OWNED}
    if not any(k.lower() == "message-id" for k in extra):
        msg["Message-ID"] = email.utils.make_msgid(domain=domain)
    for key, value in extra.items():
        if "\r" in value or "\n" in value:
            raise ValueError(f"header {key} contains a line break")
        if key in msg:
            del msg[key]
        msg[key] = value
    msg.set_content(mail.text, subtype="plain", charset="utf-8", cte="quoted-printable")
    if mail.html is not None:
        msg.add_alternative(mail.html, subtype="html", charset="utf-8", cte="quoted-printable")
    return msg


def to_bytes(msg: EmailMessage, *, utf8: bool = False, linesep: str = "\r\n") -> bytes:
    """The message with CRLF line ends as SMTP wants them (``linesep="\n"`` for a file on disk);
    ``utf8`` leaves headers in UTF-8 (for SMTPUTF8) instead of encoded words."""
    policy = email.policy.SMTPUTF8 if utf8 else email.policy.SMTP
    return msg.as_bytes(policy=policy.clone(linesep=linesep))
