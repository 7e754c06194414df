"""The SMTP mailer against a real aiosmtpd server on loopback: success, refusals, timeouts, TLS, AUTH."""

from __future__ import annotations

import email.policy
import socket
from dataclasses import replace
from email.parser import BytesParser
from pathlib import Path

import pytest

from paperfeed.adapters.mail import OutboxMailer, SmtpMailer
from paperfeed.bootstrap import build_app
from paperfeed.bootstrap.mail import smtp_config
from paperfeed.domain.mail import (
    MailDeliveryUnknown,
    MailPermanentError,
    MailServerError,
    MailTemporaryError,
    OutgoingMail,
    SessionMailer,
)
from paperfeed.settings import Settings
from tests.support.bounded import run_bounded
from tests.support.defaults import DEFAULTS
from tests.support.smtp_server import SmtpTestServer, smtp_test_server

SENDER = "paperfeed <digest@paperfeed.test>"


# What a hung step waits before the client gives up. The steps before the hang must answer within it too,
# so it is seconds, not a fraction: a loaded machine's pause must not look like a hang.
HANG_TIMEOUT = 2.0


def mailer_for(server: SmtpTestServer, **overrides: object) -> SmtpMailer:
    options: dict[str, object] = {
        "port": server.port,
        "sender": SENDER,
        "security": server.tls or "none",
        "timeout": 5.0,
        "ca_file": server.ca_file,
    }
    options.update(overrides)
    return SmtpMailer(replace(smtp_config(DEFAULTS, server.host), **options))  # type: ignore[arg-type]


def mail(to: str = "reader@example.org", **kw: object) -> OutgoingMail:
    fields: dict[str, object] = {
        "to": to,
        "subject": "Your papers — 3 new",
        "text": "Hello\n.leading dot line\nÜmlaut ∑ text\n",
        "html": "<p>Hello <b>reader</b> ∑</p>",
    }
    fields.update(kw)
    return OutgoingMail(**fields)  # type: ignore[arg-type]


def test_sends_multipart_text_and_html_with_headers(smtp_server: SmtpTestServer) -> None:
    mailer = mailer_for(smtp_server)
    assert isinstance(mailer, SessionMailer)
    headers = {"List-Unsubscribe": "<https://x.test/u/1>", "Message-ID": "<digest-1@paperfeed.test>"}
    mailer.send(mail(headers=headers))
    (got,) = smtp_server.wait_for(1)
    assert got.mail_from == "digest@paperfeed.test"
    assert got.rcpt_tos == ("reader@example.org",)
    assert got["From"] == SENDER
    assert got.subject == "Your papers — 3 new"
    assert got["List-Unsubscribe"] == "<https://x.test/u/1>"
    assert got["Message-ID"] == "<digest-1@paperfeed.test>"
    assert got.message.get_content_type() == "multipart/alternative"
    assert got.text == "Hello\n.leading dot line\nÜmlaut ∑ text\n"  # dot-stuffing undone, UTF-8 intact
    assert got.html is not None
    assert "<b>reader</b> ∑" in got.html
    assert max(len(line) for line in got.data.split(b"\r\n")) <= 998
    assert got.data.isascii()  # quoted-printable: 7-bit safe through any relay


def test_text_only_mail_is_not_multipart(smtp_server: SmtpTestServer) -> None:
    mailer_for(smtp_server).send(mail(html=None))
    (got,) = smtp_server.wait_for(1)
    assert got.message.get_content_type() == "text/plain"
    assert got.html is None


def test_send_many_reuses_one_connection_and_reports_each_result(smtp_server: SmtpTestServer) -> None:
    smtp_server.refuse("gone@example.org")
    smtp_server.fail_temporarily(1, recipient="busy@example.org")
    mails = [mail(f"r{i}@example.org") for i in range(3)]
    mails.insert(1, mail("gone@example.org"))
    mails.insert(3, mail("busy@example.org"))
    results = mailer_for(smtp_server).send_many(mails)
    assert [type(r).__name__ if r else None for r in results] == [
        None,
        "MailPermanentError",
        None,
        "MailTemporaryError",
        None,
    ]
    assert "550" in str(results[1])
    assert "451" in str(results[3])
    got = smtp_server.wait_for(3)
    assert [m.to for m in got] == ["r0@example.org", "r1@example.org", "r2@example.org"]
    assert len({m.peer for m in got}) == 1  # one connection carried all of them


def test_temporary_failure_then_success(smtp_server: SmtpTestServer) -> None:
    smtp_server.fail_temporarily(2, stage="data")
    mailer = mailer_for(smtp_server)
    for _ in range(2):
        with pytest.raises(MailTemporaryError, match="451"):
            mailer.send(mail())
    mailer.send(mail())
    assert len(smtp_server.wait_for(1)) == 1


def test_permanent_refusal_is_not_a_server_error(smtp_server: SmtpTestServer) -> None:
    smtp_server.refuse("gone@example.org")
    with pytest.raises(MailPermanentError) as caught:
        mailer_for(smtp_server).send(mail("gone@example.org"))
    assert not isinstance(caught.value, MailTemporaryError)
    assert "RCPT TO for gone@example.org: 550" in str(caught.value)


def test_hang_after_data_times_out_after_the_handover(smtp_server: SmtpTestServer) -> None:
    smtp_server.hang("data")
    handed: list[bool] = []
    with (
        mailer_for(smtp_server, timeout=HANG_TIMEOUT).session() as session,
        pytest.raises(MailDeliveryUnknown, match="end of data"),  # the hang never ends: the timeout does
    ):
        run_bounded(lambda: session.send(mail(), on_handover=lambda: handed.append(True)), 20)
    assert handed == [True]  # the server may have the message: the caller must know


def test_hang_before_data_times_out_before_the_handover(smtp_server: SmtpTestServer) -> None:
    smtp_server.hang("mail")
    handed: list[bool] = []
    with mailer_for(smtp_server, timeout=HANG_TIMEOUT).session() as session:
        with pytest.raises(MailTemporaryError, match="MAIL FROM") as caught:
            session.send(mail(), on_handover=lambda: handed.append(True))
        assert not isinstance(caught.value, MailDeliveryUnknown)
    assert handed == []
    smtp_server.reset()
    assert smtp_server.messages == []


def test_session_recovers_after_a_timeout(smtp_server: SmtpTestServer) -> None:
    smtp_server.hang("mail")
    with mailer_for(smtp_server, timeout=HANG_TIMEOUT).session() as session:
        with pytest.raises(MailTemporaryError):
            session.send(mail("a@example.org"))
        smtp_server.reset()
        session.send(mail("b@example.org"))  # a new connection
    assert [m.to for m in smtp_server.wait_for(1)] == ["b@example.org"]


def test_unreachable_server_is_a_server_error_and_fails_the_rest_fast() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        config = replace(smtp_config(DEFAULTS, "127.0.0.1"), port=port, sender=SENDER, security="none")
        mailer = SmtpMailer(config)
        results = mailer.send_many([mail(), mail(), mail()])
    assert all(isinstance(r, MailServerError) for r in results)
    assert "unreachable" in str(results[0])


def test_starttls_with_auth(tmp_path: Path) -> None:
    with smtp_test_server(tls="starttls", users={"digest": "s3cret"}, ca_dir=tmp_path) as server:
        mailer_for(server, username="digest", password="s3cret").send(mail())
        assert len(server.wait_for(1)) == 1
        with pytest.raises(MailServerError, match="authentication as 'digest' failed: 535"):
            mailer_for(server, username="digest", password="wrong").send(mail())
        with pytest.raises(MailServerError, match="TLS failed"):  # a certificate we do not trust
            mailer_for(server, username="digest", password="s3cret", ca_file=None).send(mail())


def test_plain_connection_to_a_starttls_only_server_needs_starttls(tmp_path: Path) -> None:
    with smtp_test_server(tls="starttls", users={"digest": "pw"}, ca_dir=tmp_path) as server:
        with pytest.raises(MailServerError, match="PAPERFEED_SMTP_SECURITY"):
            mailer_for(server, security="none", username="digest", password="pw").send(mail())
        assert server.messages == []


def test_implicit_tls(tmp_path: Path) -> None:
    with smtp_test_server(tls="ssl", ca_dir=tmp_path) as server:
        mailer_for(server).send(mail())
        assert server.wait_for(1)[0].text.startswith("Hello")


def test_outbox_mailer_writes_eml_files(tmp_path: Path) -> None:
    outbox = tmp_path / "outbox"
    mailer = OutboxMailer(outbox, SENDER)
    assert isinstance(mailer, SessionMailer)
    handed: list[bool] = []
    with mailer.session() as session:
        session.send(mail("x@example.org"), on_handover=lambda: handed.append(True))
    assert mailer.send_many([mail("y@example.org")]) == [None]
    files = sorted(outbox.glob("*.eml"))
    assert len(files) == 2
    assert handed == [True]
    assert not list(outbox.glob(".*.part"))
    parsed = BytesParser(policy=email.policy.default).parsebytes(files[0].read_bytes())
    assert parsed["To"] == "x@example.org"
    assert parsed.get_body(("plain",)).get_content() == "Hello\n.leading dot line\nÜmlaut ∑ text\n"  # type: ignore[union-attr]


def test_app_mailer_follows_the_settings(tmp_path: Path, smtp_server: SmtpTestServer) -> None:
    app = build_app(Settings(data_dir=tmp_path, **smtp_server.settings()))
    try:
        assert isinstance(app.mail.mailer, SmtpMailer)
        app.mail.mailer.send(mail())
        assert len(smtp_server.wait_for(1)) == 1
    finally:
        app.close()
    offline = build_app(Settings(data_dir=tmp_path, smtp_host=None))
    try:
        assert isinstance(offline.mail.mailer, OutboxMailer)
        assert offline.mail.mailer.folder == tmp_path / "outbox"
    finally:
        offline.close()


def test_bad_recipient_is_refused_before_connecting(smtp_server: SmtpTestServer) -> None:
    with pytest.raises(MailPermanentError, match="not a mail address"):
        mailer_for(smtp_server).send(mail("no-at-sign"))
    with pytest.raises(MailPermanentError):
        mailer_for(smtp_server).send(mail("a@b.org\r\nBcc: x@y.org"))
    assert smtp_server.events == []
