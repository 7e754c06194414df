"""Issue #12, finding 4: addresses with a NUL or an empty label were accepted (and handed to SMTP).

Every form where an address enters (sign-up, sign-in link, reset, resend confirmation, digest
subscription) refuses them with a 400 naming the field, stores nothing and mails nothing; the mail adapter
itself refuses them before any SMTP command, whatever a caller forgot to check.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from paperfeed.adapters.mail.smtp import SmtpMailer
from paperfeed.adapters.store.schema_accounts import users
from paperfeed.bootstrap import App
from paperfeed.bootstrap.mail import smtp_config
from paperfeed.domain.accounts import InvalidEmail, normalize_email
from paperfeed.domain.digest import InvalidPreferences
from paperfeed.domain.digest import normalize_email as digest_email
from paperfeed.domain.email_address import InvalidEmailAddress, parse_email_address
from paperfeed.domain.mail import MailPermanentError, OutgoingMail
from tests.support.defaults import DEFAULTS
from tests.support.smtp_server import SmtpTestServer

from .conftest import Mailbox, fill

BAD = ["a\x00b@x.test", "x@probe..test", "x@.probe.test", "a b@example.org", "x@y.org\r\nBcc: z@w.org"]
FORMS = [
    ("/signup", "/signup", {"password": ""}),
    ("/signin", "/signin/email", {}),
    ("/forgot", "/forgot", {}),
    ("/signin", "/verify/resend", {}),
]


def _user_count(app: App) -> int:
    with app.core.store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(users)).scalar_one())


@pytest.mark.parametrize("address", BAD, ids=["nul", "empty-label", "leading-dot", "space", "crlf"])
@pytest.mark.parametrize(("page", "action", "extra"), FORMS, ids=[f[1] for f in FORMS])
def test_account_forms_refuse_bad_addresses(
    site: TestClient,
    app: App,
    smtp_server: SmtpTestServer,
    page: str,
    action: str,
    extra: dict[str, str],
    address: str,
) -> None:
    before = _user_count(app)
    reply = fill(site, page, action, {"email": address, **extra})
    assert reply.status_code == 400, reply.text
    assert "Email:" in reply.text
    assert "Check your inbox" not in reply.text
    assert _user_count(app) == before
    app.readers.accounts.close()  # wait for anything handed to the mail thread
    assert smtp_server.messages == []


def test_the_digest_form_refuses_bad_addresses(
    site: TestClient, app: App, smtp_server: SmtpTestServer
) -> None:
    for address in BAD:
        reply = fill(
            site,
            "/digest",
            "/digest",
            {
                "email": address,
                "cadence": "weekly",
                "send_hour": "8",
                "timezone": "UTC",
                "weekday": "0",
                "sections": "trending",
            },
        )
        assert reply.status_code == 400, (address, reply.text[:500])
        assert "Email:" in reply.text
        assert app.digests.subscriptions.by_email(address.lower()) is None
    assert smtp_server.messages == []


def test_good_addresses_still_work_and_are_normalised(site: TestClient, mailbox: Mailbox, app: App) -> None:
    reply = fill(site, "/signup", "/signup", {"email": "  Zoe.Q+papers@Example.ORG ", "password": ""})
    assert reply.status_code == 200
    assert app.readers.accounts.user_by_email("zoe.q+papers@example.org").email == "zoe.q+papers@example.org"
    mailbox.wait("zoe.q+papers@example.org", "confirm your email")
    # .test is reserved for testing (RFC 6761): accepted, so instances can be tried with such addresses
    assert fill(site, "/signup", "/signup", {"email": "kim@x.test", "password": ""}).status_code == 200


def test_one_rule_for_accounts_digests_and_mail() -> None:
    assert parse_email_address("  Ada@Example.ORG ") == "ada@example.org"
    assert parse_email_address("kim@example.test") == "kim@example.test"
    assert parse_email_address("jürgen@bücher.de") == "jürgen@bücher.de"
    for bad in [*BAD, "", "ada", "ada@", "@example.org", "ada@example", "ada@corp.local", '"q"@example.org']:
        with pytest.raises(InvalidEmailAddress):
            parse_email_address(bad)
        with pytest.raises(InvalidEmail, match=r"^Email: "):
            normalize_email(bad)
        with pytest.raises(InvalidPreferences) as caught:
            digest_email(bad)
        assert caught.value.field == "email"


@pytest.mark.parametrize("address", BAD, ids=["nul", "empty-label", "leading-dot", "space", "crlf"])
def test_the_mail_adapter_never_hands_a_bad_address_to_smtp(
    smtp_server: SmtpTestServer, address: str
) -> None:
    config = replace(
        smtp_config(DEFAULTS, smtp_server.host),
        port=smtp_server.port,
        sender="pf <pf@example.org>",
        security="none",
    )
    mailer = SmtpMailer(config)
    with pytest.raises(MailPermanentError, match="not a mail address"):
        mailer.send(OutgoingMail(to=address, subject="hello", text="hello"))
    mailer.send(OutgoingMail(to="fine@example.org", subject="hello", text="hello"))
    (got,) = smtp_server.wait_for(1)
    assert got.rcpt_tos == ("fine@example.org",)
    rcpts = [who for stage, who, _ in smtp_server.events if stage == "rcpt"]
    assert rcpts == ["fine@example.org"]  # the bad address never reached the server, not even RCPT TO
