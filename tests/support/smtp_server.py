"""A real SMTP server on loopback (aiosmtpd) that records every message it accepts, for mail tests.

It listens on a socket bound here to port 0 (no free-port race) and can be told to misbehave::

    def test_something(smtp_server: SmtpTestServer) -> None:
        settings = Settings(data_dir=tmp, **smtp_server.settings())   # PAPERFEED_SMTP_* for this server
        ...send mail through the app...
        mail = smtp_server.wait_for(1)[0]
        mail.to, mail.subject, mail.text, mail.html, mail["List-Unsubscribe"]
        smtp_server.links()                                            # every http(s) URL in the text part

    smtp_server.refuse("gone@example.org")              # 550 at RCPT for that address (or everyone)
    smtp_server.fail_temporarily(times=2)               # 451 the first 2 times (at RCPT, or at DATA)
    smtp_server.hang("data")                            # never answer that step: the client times out
    smtp_server.reset()                                 # accept everything again

``SmtpTestServer(tls="starttls" | "ssl", users={"name": "password"})`` adds TLS (a throw-away CA from
trustme; ``ca_file`` is its certificate for the client to trust) and AUTH. ``on_data`` and ``on_mail``
callbacks run inside the server at those steps (the crash tests kill the client from there).
"""

from __future__ import annotations

import asyncio
import email.policy
import re
import socket
import ssl
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path
from typing import Any, Literal

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session

__all__ = ["Received", "SmtpTestServer", "smtp_server", "smtp_test_server"]

Stage = Literal["mail", "rcpt", "data"]
_URL = re.compile(r"https?://[^\s<>\"')\]]+")


@dataclass(frozen=True)
class Received:
    """One accepted message: the envelope, the raw bytes and the parsed message."""

    mail_from: str
    rcpt_tos: tuple[str, ...]
    data: bytes
    message: EmailMessage
    received_at: datetime
    peer: str  # the client's address and port: equal for messages sent over one connection

    @property
    def to(self) -> str:
        return self.rcpt_tos[0]

    @property
    def subject(self) -> str:
        return str(self.message["Subject"] or "")

    def __getitem__(self, header: str) -> str | None:
        value = self.message[header]
        return None if value is None else str(value).strip()  # a folded header keeps its leading space

    def _part(self, subtype: str) -> str | None:
        part = self.message.get_body(preferencelist=(subtype,))
        if part is None or part.get_content_subtype() != subtype:
            return None
        content = part.get_content()
        return str(content)

    @property
    def text(self) -> str:
        return self._part("plain") or ""

    @property
    def html(self) -> str | None:
        return self._part("html")

    def links(self) -> list[str]:
        """Every http(s) URL in the plain-text part, in order."""
        return _URL.findall(self.text)


@dataclass
class _Rule:
    stage: Stage
    code: int
    message: str
    recipient: str | None  # None: everyone
    times: int | None  # None: always


@dataclass
class _Modes:
    rules: list[_Rule] = field(default_factory=list)
    hang: Stage | None = None


class _Handler:
    def __init__(self, server: SmtpTestServer) -> None:
        self.server = server

    async def _gate(self, stage: Stage, recipient: str | None) -> str | None:
        srv = self.server
        with srv._lock:
            srv.events.append((stage, recipient or "", time.monotonic()))
            srv._arrived.notify_all()
            hang = srv._modes.hang == stage
            reply = None
            for rule in srv._modes.rules:
                if rule.stage != stage or (rule.recipient and rule.recipient != recipient):
                    continue
                if rule.times is not None:
                    if rule.times <= 0:
                        continue
                    rule.times -= 1
                reply = f"{rule.code} {rule.message}"
                break
        if hang:
            await srv._released().wait()
            return "421 4.3.2 the test server was released while hanging"
        return reply

    async def handle_MAIL(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, mail_options: list[str]
    ) -> str:
        hook = self.server.on_mail
        if hook is not None:
            await _maybe_await(hook(address))
        refused = await self._gate("mail", None)
        if refused:
            return refused
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, rcpt_options: list[str]
    ) -> str:
        refused = await self._gate("rcpt", address.lower())
        if refused:
            return refused
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        first = envelope.rcpt_tos[0].lower() if envelope.rcpt_tos else None
        refused = await self._gate("data", first)
        if refused:
            return refused
        raw = envelope.original_content or b""
        if isinstance(envelope.content, bytes):
            raw = envelope.content
        # parsed with LF line ends, so text parts read back as they were written
        parsed = BytesParser(policy=email.policy.default).parsebytes(raw.replace(b"\r\n", b"\n"))
        assert isinstance(parsed, EmailMessage)
        item = Received(
            mail_from=str(envelope.mail_from),
            rcpt_tos=tuple(envelope.rcpt_tos),
            data=raw,
            message=parsed,
            received_at=datetime.now(UTC),
            peer=str(session.peer),
        )
        srv = self.server
        with srv._lock:
            srv._messages.append(item)
            count = len(srv._messages)
            srv._arrived.notify_all()
        hook = srv.on_data
        if hook is not None:
            await _maybe_await(hook(item, count))
        return "250 2.0.0 Message accepted for delivery"


async def _maybe_await(value: Any) -> None:
    if asyncio.iscoroutine(value):
        await value


class _BoundController(Controller):
    """aiosmtpd's Controller serving on a socket we bound ourselves (port 0: the OS picks a free one)."""

    def __init__(self, handler: Any, sock: socket.socket, **kwargs: Any) -> None:
        self._sock = sock
        super().__init__(handler, hostname="127.0.0.1", port=sock.getsockname()[1], **kwargs)

    def _create_server(self) -> Any:
        return self.loop.create_server(self._factory_invoker, sock=self._sock, ssl=self.ssl_context)


class SmtpTestServer:
    """The recording server. Thread-safe; ``messages`` is a snapshot of what was accepted so far."""

    def __init__(
        self,
        *,
        tls: Literal["starttls", "ssl"] | None = None,
        users: dict[str, str] | None = None,
        ca_dir: Path | None = None,
    ) -> None:
        self.tls = tls
        self.users = dict(users or {})
        self.ca_file: Path | None = None
        self.events: list[tuple[str, str, float]] = []  # (stage, recipient, monotonic time) of every step
        self.on_mail: Callable[[str], Awaitable[None] | None] | None = None
        self.on_data: Callable[[Received, int], Awaitable[None] | None] | None = None
        self._messages: list[Received] = []
        self._modes = _Modes()
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._release: asyncio.Event | None = None
        self._stopped = False
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.host = "127.0.0.1"
        self.port: int = self._sock.getsockname()[1]
        kwargs: dict[str, Any] = {"enable_SMTPUTF8": True, "server_hostname": "smtp.test", "timeout": 30}
        if tls is not None:
            server_ctx = self._tls_context(ca_dir)
            if tls == "ssl":
                kwargs["ssl_context"] = server_ctx
            else:
                kwargs["tls_context"] = server_ctx
        if self.users:
            kwargs["authenticator"] = self._authenticate
            kwargs["auth_required"] = True
            kwargs["auth_require_tls"] = tls is not None
        self._controller = _BoundController(_Handler(self), self._sock, **kwargs)

    def _tls_context(self, ca_dir: Path | None) -> ssl.SSLContext:
        import tempfile

        import trustme

        ca = trustme.CA()
        cert = ca.issue_cert("127.0.0.1", "localhost")
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        cert.configure_cert(ctx)
        folder = ca_dir or Path(tempfile.mkdtemp(prefix="smtp-test-ca-"))
        self.ca_file = folder / "smtp-test-ca.pem"
        ca.cert_pem.write_to_path(str(self.ca_file))
        return ctx

    def _authenticate(
        self, server: SMTP, session: Session, envelope: Envelope, mechanism: str, auth_data: Any
    ) -> AuthResult:
        if isinstance(auth_data, LoginPassword):
            user, password = auth_data.login.decode(), auth_data.password.decode()
            if self.users.get(user) == password:
                return AuthResult(success=True)
        return AuthResult(success=False, handled=False)

    # -- life ---------------------------------------------------------------------------------------

    def start(self) -> SmtpTestServer:
        self._controller.start()
        return self

    def stop(self) -> None:
        """Stop serving (new connections are refused); safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        self.release()
        self._controller.stop()
        self._sock.close()

    def _released(self) -> asyncio.Event:
        if self._release is None:
            self._release = asyncio.Event()
        return self._release

    def release(self) -> None:
        """Let every hanging step finish (with a 421) and stop hanging."""
        with self._lock:
            self._modes.hang = None
        event = self._release
        if event is not None:
            self._controller.loop.call_soon_threadsafe(event.set)
        self._release = None

    # -- modes --------------------------------------------------------------------------------------

    def refuse(
        self, recipient: str | None = None, *, code: int = 550, message: str = "5.1.1 No such user here"
    ) -> None:
        """Refuse ``recipient`` (or everyone) permanently at RCPT."""
        rule = _Rule("rcpt", code, message, recipient.lower() if recipient else None, None)
        with self._lock:
            self._modes.rules.append(rule)

    def fail_temporarily(
        self,
        times: int = 1,
        *,
        recipient: str | None = None,
        stage: Stage = "rcpt",
        code: int = 451,
        message: str = "4.3.0 Temporary failure, try again later",
    ) -> None:
        """Answer ``code`` at ``stage`` the first ``times`` times (for ``recipient``, or anyone)."""
        rule = _Rule(stage, code, message, recipient.lower() if recipient else None, times)
        with self._lock:
            self._modes.rules.append(rule)

    def hang(self, stage: Stage = "data") -> None:
        """Never answer ``stage`` (``data``: after the whole message was sent), so the client times out."""
        with self._lock:
            self._modes.hang = stage

    def reset(self) -> None:
        """Accept everything again (and let hanging steps go)."""
        self.release()
        with self._lock:
            self._modes.rules.clear()

    # -- what arrived -------------------------------------------------------------------------------

    @property
    def messages(self) -> list[Received]:
        with self._lock:
            return list(self._messages)

    def clear(self) -> None:
        with self._lock:
            self._messages.clear()
            self.events.clear()

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        """Block until at least ``count`` messages arrived; fail the test after ``timeout`` seconds."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: len(self._messages) >= count, timeout):
                pytest.fail(f"the SMTP test server got {len(self._messages)} of {count} messages")
            return list(self._messages)

    def wait_for_step(self, stage: Stage, recipient: str = "", timeout: float = 10.0) -> None:
        """Block until a client reached ``stage`` (for ``recipient``, or anyone); fail after ``timeout`` s."""
        wanted = recipient.lower()

        def reached() -> bool:
            return any(s == stage and (not wanted or r == wanted) for s, r, _ in self.events)

        with self._arrived:
            if not self._arrived.wait_for(reached, timeout):
                pytest.fail(f"no SMTP client reached {stage} {recipient} within {timeout:g} s")

    def to(self, recipient: str) -> list[Received]:
        """Messages for ``recipient`` (case-insensitive)."""
        wanted = recipient.lower()
        return [m for m in self.messages if any(r.lower() == wanted for r in m.rcpt_tos)]

    def per_recipient(self) -> Counter[str]:
        return Counter(r.lower() for m in self.messages for r in m.rcpt_tos)

    def settings(self) -> dict[str, Any]:
        """Keyword arguments for :class:`~paperfeed.settings.Settings` that point the app here."""
        values: dict[str, Any] = {
            "smtp_host": self.host,
            "smtp_port": self.port,
            "smtp_security": self.tls or "none",
            "smtp_timeout": 5.0,
        }
        if self.ca_file is not None:
            values["smtp_ca_file"] = self.ca_file
        return values

    def environ(self) -> dict[str, str]:
        """The same as ``PAPERFEED_*`` environment variables, for a ``paperfeed`` subprocess."""
        return {f"PAPERFEED_{k.upper()}": str(v) for k, v in self.settings().items()}


@contextmanager
def smtp_test_server(**options: Any) -> Iterator[SmtpTestServer]:
    """Start a :class:`SmtpTestServer` (options as its constructor's) and stop it afterwards."""
    server = SmtpTestServer(**options).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def smtp_server() -> Iterator[SmtpTestServer]:
    """A fresh plain (no TLS, no AUTH) recording SMTP server on loopback for one test."""
    with smtp_test_server() as server:
        yield server
