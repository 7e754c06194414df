"""Send mail over SMTP with :mod:`smtplib`: plain, STARTTLS or implicit TLS, AUTH, reused connections.

Replies map onto the mail port's errors: 4xx, timeouts and dropped connections are
:class:`~paperfeed.domain.mail.MailTemporaryError`; a 5xx for a recipient (RCPT, DATA, the final dot) is
:class:`~paperfeed.domain.mail.MailPermanentError`; anything that says the server refuses *us* (cannot
connect, TLS or authentication fails, our sender address is rejected) is
:class:`~paperfeed.domain.mail.MailServerError`, so callers stop instead of blaming every recipient.

The DATA phase is written out here rather than through ``SMTP.sendmail`` so that a caller's
``on_handover`` hook runs between the message body and the end-of-data dot: until the dot is written the
server cannot have accepted the message, which is what the digest send ledger builds on.
"""

from __future__ import annotations

import logging
import re
import smtplib
import socket
import ssl
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from paperfeed.domain.mail import (
    MailDeliveryUnknown,
    MailError,
    MailPermanentError,
    MailServerError,
    MailTemporaryError,
    OutgoingMail,
)

from .message import build_message, envelope_address, to_bytes

__all__ = ["SmtpConfig", "SmtpMailer", "SmtpSession"]

log = logging.getLogger("paperfeed.mail")

Security = Literal["none", "starttls", "ssl"]
_DEFAULT_PORTS: dict[str, int] = {"none": 25, "starttls": 587, "ssl": 465}
_LEADING_DOT = re.compile(rb"(?m)^\.")


@dataclass(frozen=True, slots=True)
class SmtpConfig:
    """Where and how to reach the SMTP server (from the ``PAPERFEED_SMTP_*`` settings)."""

    host: str
    sender: str  # the From header; its bare address is the envelope sender
    port: int | None  # None: by security, 25, 587 (STARTTLS), 465 (SSL)
    security: Security
    username: str | None  # None: no AUTH
    password: str | None
    timeout: float
    ca_file: Path | None  # certificates to trust instead of the system's (a private CA); None: the system's
    local_hostname: str | None = None  # the name sent in EHLO (default: this machine's FQDN)

    @property
    def effective_port(self) -> int:
        return self.port if self.port is not None else _DEFAULT_PORTS[self.security]

    @property
    def where(self) -> str:
        return f"SMTP server {self.host}:{self.effective_port}"


def _reply_text(raw: bytes | str) -> str:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    return " ".join(text.split())[:300]


class _Refused(Exception):
    """A reply other than the expected one, inside a transaction (the connection itself still works)."""

    def __init__(self, stage: str, code: int, text: str) -> None:
        super().__init__(f"{stage}: {code} {text}")
        self.stage, self.code, self.text = stage, code, text


class SmtpSession:
    """One connection (opened on first use, reopened after a failure) carrying any number of messages."""

    def __init__(self, config: SmtpConfig) -> None:
        self.config = config
        self._smtp: smtplib.SMTP | None = None
        self._carried = 0  # messages sent on the current connection
        self._broken: MailServerError | None = None  # connecting failed: fail fast for the rest

    # -- connection ---------------------------------------------------------------------------------

    def _ssl_context(self) -> ssl.SSLContext:
        cafile = str(self.config.ca_file) if self.config.ca_file else None
        return ssl.create_default_context(cafile=cafile)

    def _connect(self) -> smtplib.SMTP:
        cfg = self.config
        where = cfg.where
        smtp: smtplib.SMTP | None = None
        try:
            if cfg.security == "ssl":
                smtp = smtplib.SMTP_SSL(
                    cfg.host,
                    cfg.effective_port,
                    cfg.local_hostname,
                    timeout=cfg.timeout,
                    context=self._ssl_context(),
                )
            else:
                smtp = smtplib.SMTP(cfg.host, cfg.effective_port, cfg.local_hostname, timeout=cfg.timeout)
            _no_delay(smtp)
            smtp.ehlo_or_helo_if_needed()
            if cfg.security == "starttls":
                if not smtp.has_extn("starttls"):
                    raise MailServerError(f"{where} does not offer STARTTLS (PAPERFEED_SMTP_SECURITY)")
                smtp.starttls(context=self._ssl_context())
                smtp.ehlo()
            if cfg.username:
                smtp.login(cfg.username, cfg.password or "")
        except MailServerError:
            _close_quietly(smtp)
            raise
        except smtplib.SMTPAuthenticationError as exc:
            _close_quietly(smtp)
            raise MailServerError(
                f"{where}: authentication as {cfg.username!r} failed: "
                f"{exc.smtp_code} {_reply_text(exc.smtp_error)}"
            ) from None
        except smtplib.SMTPNotSupportedError as exc:
            _close_quietly(smtp)
            raise MailServerError(f"{where}: {exc} (check PAPERFEED_SMTP_SECURITY)") from None
        except smtplib.SMTPResponseException as exc:  # includes a refused greeting (SMTPConnectError)
            _close_quietly(smtp)
            text = f"{where} refused the connection: {exc.smtp_code} {_reply_text(exc.smtp_error)}"
            raise MailServerError(text) from None
        except ssl.SSLError as exc:
            _close_quietly(smtp)
            raise MailServerError(f"{where}: TLS failed: {exc}") from None
        except (smtplib.SMTPException, OSError) as exc:
            _close_quietly(smtp)
            raise MailServerError(f"{where} is unreachable: {exc or type(exc).__name__}") from None
        return smtp

    def close(self) -> None:
        smtp, self._smtp = self._smtp, None
        if smtp is not None:
            try:
                smtp.quit()
            except (smtplib.SMTPException, OSError):
                _close_quietly(smtp)

    def _drop(self) -> None:
        """Forget a connection in an unknown state (timeout, disconnect) without talking to it."""
        smtp, self._smtp = self._smtp, None
        _close_quietly(smtp)

    # -- messages -----------------------------------------------------------------------------------

    def send(self, mail: OutgoingMail, *, on_handover: Callable[[], None] | None = None) -> None:
        if self._broken is not None:
            raise self._broken
        msg = build_message(mail, self.config.sender)
        try:
            sender, rcpt = envelope_address(self.config.sender), envelope_address(mail.to)
        except ValueError as exc:
            raise MailPermanentError(str(exc)) from None
        utf8 = not (sender.isascii() and rcpt.isascii())
        data = to_bytes(msg, utf8=utf8)
        for attempt in (1, 2):
            if self._smtp is None:
                try:
                    self._smtp = self._connect()
                except MailServerError as exc:
                    self._broken = exc
                    raise
                self._carried = 0
            reused = self._carried > 0
            stage = ["connect"]
            try:
                self._transaction(self._smtp, sender, rcpt, data, utf8, stage, on_handover)
            except _Refused as exc:
                self._reset()
                raise self._classify(exc, rcpt) from None
            except (smtplib.SMTPException, OSError) as exc:
                self._drop()
                # A reused connection the server closed while idle fails at MAIL: reconnect once.
                if attempt == 1 and reused and stage[0] == "MAIL FROM":
                    log.debug("%s dropped an idle connection; reconnecting", self.config.where)
                    continue
                text = f"{self.config.where}: connection failed at {stage[0]} for {rcpt}: "
                text += str(exc) or type(exc).__name__
                if stage[0] == "end of data":  # the dot may have arrived: the server may have it
                    raise MailDeliveryUnknown(text) from None
                raise MailTemporaryError(text) from None
            self._carried += 1
            return

    def _transaction(
        self,
        smtp: smtplib.SMTP,
        sender: str,
        rcpt: str,
        data: bytes,
        utf8: bool,
        stage: list[str],
        on_handover: Callable[[], None] | None,
    ) -> None:
        options: list[str] = []
        if utf8:
            if not smtp.has_extn("smtputf8"):
                raise _Refused("SMTPUTF8", 553, "the address is not ASCII and the server lacks SMTPUTF8")
            options.append("SMTPUTF8")
        if smtp.has_extn("size"):
            options.append(f"SIZE={len(data)}")
        stage[0] = "MAIL FROM"
        code, reply = smtp.mail(sender, options)
        if code != 250:
            raise _Refused(stage[0], code, _reply_text(reply))
        stage[0] = "RCPT TO"
        code, reply = smtp.rcpt(rcpt)
        if code not in (250, 251):
            raise _Refused(stage[0], code, _reply_text(reply))
        stage[0] = "DATA"
        code, reply = smtp.docmd("data")
        if code != 354:
            raise _Refused(stage[0], code, _reply_text(reply))
        body = _LEADING_DOT.sub(b"..", data)
        if not body.endswith(b"\r\n"):
            body += b"\r\n"
        smtp.send(body)
        if on_handover is not None:
            on_handover()
        stage[0] = "end of data"
        smtp.send(b".\r\n")
        code, reply = smtp.getreply()
        if code != 250:
            raise _Refused(stage[0], code, _reply_text(reply))

    def _reset(self) -> None:
        """After a refused step the connection still works: RSET clears the half-done transaction."""
        smtp = self._smtp
        if smtp is None:
            return
        try:
            smtp.command_encoding = "ascii"
            code, _ = smtp.rset()
            if code != 250:
                self._drop()
        except (smtplib.SMTPException, OSError):
            self._drop()

    def _classify(self, exc: _Refused, rcpt: str) -> MailError:
        text = f"{self.config.where}: {exc.stage} for {rcpt}: {exc.code} {exc.text}"
        if 400 <= exc.code < 500:
            if exc.code == 421:  # the server is closing the connection
                self._drop()
            return MailTemporaryError(text)
        if 500 <= exc.code < 600:
            if exc.stage == "MAIL FROM":
                return MailServerError(f"{text} (check PAPERFEED_MAIL_FROM)")
            return MailPermanentError(text)
        return MailTemporaryError(f"{text} (unexpected reply)")


def _no_delay(smtp: smtplib.SMTP) -> None:
    """Small writes go out at once: without this, the end-of-data dot written right after the body
    waits for the server's delayed ACK (Nagle), tens of milliseconds per message."""
    sock = smtp.sock
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _close_quietly(smtp: smtplib.SMTP | None) -> None:
    if smtp is not None:
        with suppress(OSError):
            smtp.close()


class SmtpMailer:
    """:class:`~paperfeed.domain.mail.SessionMailer` over SMTP; thread-safe (a session per call)."""

    def __init__(self, config: SmtpConfig) -> None:
        self.config = config

    @contextmanager
    def session(self) -> Iterator[SmtpSession]:
        session = SmtpSession(self.config)
        try:
            yield session
        finally:
            session.close()

    def send(self, mail: OutgoingMail) -> None:
        with self.session() as session:
            session.send(mail)

    def send_many(self, mails: Sequence[OutgoingMail]) -> list[MailError | None]:
        """One connection for all; a server that cannot be reached fails the rest at once."""
        results: list[MailError | None] = []
        with self.session() as session:
            for mail in mails:
                try:
                    session.send(mail)
                except MailError as exc:
                    results.append(exc)
                else:
                    results.append(None)
        return results

    def describe(self) -> str:
        return f"{self.config.where} ({self.config.security})"
