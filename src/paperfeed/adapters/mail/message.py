"""Turn an :class:`~paperfeed.domain.mail.OutgoingMail` into the MIME message every mailer sends.

Plain text alone, or multipart/alternative text + HTML, quoted-printable (7-bit safe through any relay).
With inline images, the HTML alternative is a multipart/related of the HTML and each image (base64,
``Content-ID`` and ``Content-Disposition: inline``), which the HTML shows by ``cid:``.
Built with the classic ``email.mime`` classes (compat32 policy): the modern ``EmailMessage`` API parses
every header through the header registry and cost ~20 ms a message, most of the time of a digest run.
Addresses that are not ASCII (SMTPUTF8) take the modern path, which writes them as UTF-8.
"""

from __future__ import annotations

import email.policy
import email.utils
from email.charset import QP, Charset
from email.header import Header
from email.message import EmailMessage, Message
from email.mime.image import MIMEImage
from email.mime.multipart import MIMEMultipart
from email.mime.nonmultipart import MIMENonMultipart
from email.utils import formataddr, parseaddr

from paperfeed.domain.email_address import InvalidEmailAddress, parse_email_address
from paperfeed.domain.mail import InlineImage, MailPermanentError, OutgoingMail

__all__ = ["build_message", "envelope_address", "to_bytes"]

# Headers the mailer owns; a caller's copy of one of them is ignored.
_OWNED = {"from", "to"}
_UTF8_QP = Charset("utf-8")
_UTF8_QP.header_encoding = QP
_UTF8_QP.body_encoding = QP
_CRLF_COMPAT = email.policy.compat32.clone(linesep="\r\n")
_LF_COMPAT = email.policy.compat32.clone(linesep="\n")


def envelope_address(sender: str) -> str:
    """The bare address of ``"Name <addr>"`` (the SMTP envelope wants no display name)."""
    _name, addr = parseaddr(sender)
    if not addr or "@" not in addr:
        raise ValueError(f"not a mail address: {sender!r}")
    return addr


def _check(mail: OutgoingMail) -> None:
    """Refuse, before any SMTP command, a recipient the address rules refuse (NUL, line breaks, empty
    labels…): whatever a caller forgot to check never reaches the server."""
    try:
        parse_email_address(mail.to)
    except InvalidEmailAddress as exc:
        raise MailPermanentError(f"not a mail address: {mail.to[:80]!r} ({exc})") from None
    for key, value in mail.headers.items():
        if "\r" in value or "\n" in value or "\r" in key or "\n" in key:
            raise ValueError(f"header {key} contains a line break")
    for image in mail.images:
        for value in (image.cid, image.subtype, image.filename):
            if not value.isascii() or any(c in value for c in '\r\n<>"\\'):
                raise ValueError(f"inline image field {value[:40]!r} is not a plain ASCII token")


def _header_text(value: str) -> str:
    return value if value.isascii() else Header(value, _UTF8_QP).encode()


def _text_part(body: str, subtype: str) -> MIMENonMultipart:
    part = MIMENonMultipart("text", subtype, charset="utf-8")
    part.set_payload(body, _UTF8_QP)  # adds Content-Transfer-Encoding: quoted-printable
    return part


def _image_part(image: InlineImage) -> MIMEImage:
    part = MIMEImage(image.data, image.subtype)  # base64
    part["Content-ID"] = f"<{image.cid}>"
    part["Content-Disposition"] = f'inline; filename="{image.filename}"'
    return part


def _html_with_images(html: str, images: tuple[InlineImage, ...]) -> Message:
    part = _text_part(html, "html")
    if not images:
        return part
    related = MIMEMultipart("related", _subparts=[part, *(_image_part(i) for i in images)])
    related.set_param("type", "text/html")
    return related


def build_message(mail: OutgoingMail, sender: str) -> Message:
    """The MIME message for ``mail`` from ``sender`` (``"Name <addr>"``)."""
    _check(mail)
    if not (mail.to.isascii() and sender.isascii()):
        return _build_utf8(mail, sender)
    text = _text_part(mail.text, "plain")
    msg: MIMENonMultipart | MIMEMultipart
    if mail.html is None:
        msg = text
    else:
        msg = MIMEMultipart("alternative", _subparts=[text, _html_with_images(mail.html, mail.images)])
    name, addr = parseaddr(sender)
    msg["From"] = formataddr((name, addr), charset="utf-8") if name else addr
    msg["To"] = mail.to
    msg["Subject"] = _header_text(mail.subject)
    msg["Date"] = email.utils.formatdate(localtime=False, usegmt=True)
    extra = {k: v for k, v in mail.headers.items() if k.lower() not in _OWNED}
    if not any(k.lower() == "message-id" for k in extra):
        msg["Message-ID"] = email.utils.make_msgid(domain=addr.rpartition("@")[2] or "localhost")
    for key, value in extra.items():
        del msg[key]
        msg[key] = _header_text(value)
    return msg


def _build_utf8(mail: OutgoingMail, sender: str) -> EmailMessage:
    msg = EmailMessage(policy=email.policy.SMTP)
    name, addr = parseaddr(sender)
    msg["From"] = formataddr((name, addr)) if name else addr
    msg["To"] = mail.to
    msg["Subject"] = mail.subject
    msg["Date"] = email.utils.formatdate(localtime=False, usegmt=True)
    extra = {k: v for k, v in mail.headers.items() if k.lower() not in _OWNED}
    if not any(k.lower() == "message-id" for k in extra):
        msg["Message-ID"] = email.utils.make_msgid(domain=addr.rpartition("@")[2] or "localhost")
    for key, value in extra.items():
        del msg[key]
        msg[key] = value
    msg.set_content(mail.text, subtype="plain", charset="utf-8", cte="quoted-printable")
    if mail.html is not None:
        msg.add_alternative(mail.html, subtype="html", charset="utf-8", cte="quoted-printable")
        html = next(p for p in msg.iter_parts() if p.get_content_subtype() == "html")
        assert isinstance(html, EmailMessage)
        for image in mail.images:
            html.add_related(
                image.data,
                maintype="image",
                subtype=image.subtype,
                cid=f"<{image.cid}>",
                disposition="inline",
                filename=image.filename,
            )
    return msg


def to_bytes(msg: Message, *, utf8: bool = False, linesep: str = "\r\n") -> bytes:
    """The message with CRLF line ends as SMTP wants them (``linesep="\\n"`` for a file on disk);
    ``utf8`` leaves headers of a modern message in UTF-8 (for SMTPUTF8) instead of encoded words."""
    if isinstance(msg, EmailMessage):
        policy = email.policy.SMTPUTF8 if utf8 else email.policy.SMTP
        return msg.as_bytes(policy=policy.clone(linesep=linesep))
    return msg.as_bytes(policy=_CRLF_COMPAT if linesep == "\r\n" else _LF_COMPAT)
