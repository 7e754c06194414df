"""Security issue #12, finding 2: digest sign-up mailed any address, without limit.

Before the fix, 15 POSTs to /digest from one client with 15 addresses sent 15 confirmation mails, and
the reply waited for the mail server (a new address took longer to answer than a pending one). Now the
digest form shares the account mails' store-backed limits (per client and per address, the same
buckets, so neither door doubles the mail one can cause), answers 429 with Retry-After over them and
mails nothing, and mails only after the response is sent.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.accounts import RateLimited
from paperfeed.domain.digest import Preferences, Section
from paperfeed.services.accounts import RateLimits
from paperfeed.settings import Settings
from paperfeed.web import create_app
from tests.support.digests import BASE_URL, digest_settings, load_papers, subscribe_active
from tests.support.live_server import live_server
from tests.support.smtp_server import SmtpTestServer

HTML = {"accept": "text/html"}
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
PER_CLIENT = RateLimits().mail_ip.count
PER_ADDRESS = RateLimits().mail_account.count


@pytest.fixture
def settings(tmp_path: Path, smtp_server: SmtpTestServer) -> Settings:
    return digest_settings(tmp_path / "data", smtp_server)


@pytest.fixture
def direct(settings: Settings) -> Iterator[App]:
    app = build_app(settings)
    load_papers(app)
    try:
        yield app
    finally:
        app.close()


def _client(settings: Settings, host: str = "203.0.113.7") -> TestClient:
    return TestClient(
        create_app(lambda: build_app(settings)),
        base_url=BASE_URL,
        follow_redirects=False,
        client=(host, 5000),
    )


def _form(client: TestClient, email: str) -> dict[str, str]:
    page = client.get("/digest", headers=HTML)
    found = _CSRF.search(page.text)
    assert found is not None
    return {"csrf_token": found.group(1), "email": email, "sections": "trending", "timezone": "UTC"}


def test_one_client_cannot_mail_many_addresses(
    settings: Settings, direct: App, smtp_server: SmtpTestServer
) -> None:
    """The finding as reported: 15 sign-ups, 15 addresses, one client."""
    with _client(settings) as client:
        replies = [
            client.post("/digest", data=_form(client, f"r{i}@example.org"), headers=HTML) for i in range(15)
        ]
        api = client.post(
            "/digest",
            data=_form(client, "json@example.org"),
            headers={"accept": "application/json"},
        )
    assert [r.status_code for r in replies] == [200] * PER_CLIENT + [429] * (15 - PER_CLIENT)
    over = replies[-1]
    assert int(over.headers["retry-after"]) > 0
    assert "Too many attempts" in over.text
    assert "<form" in over.text  # the form again, with the message
    assert api.status_code == 429
    assert int(api.headers["retry-after"]) > 0
    assert "Too many attempts" in api.json()["error"]
    time.sleep(0.5)  # nothing else is on its way
    assert len(smtp_server.messages) == PER_CLIENT
    assert direct.digests.subscriptions.by_email(f"r{PER_CLIENT}@example.org") is None  # nothing half-done


def test_many_clients_cannot_flood_one_address(
    settings: Settings, direct: App, smtp_server: SmtpTestServer
) -> None:
    """Per address, shared with the account mails: at most ``mail_account`` requests an hour, whatever
    the client (the once-per-10-minutes resend rule alone let one mail through every 10 minutes)."""
    direct.digests.subscriptions.resend_after = (
        direct.digests.subscriptions.resend_after * 0
    )  # each attempt would mail
    prefs = Preferences(sections=(Section.trending,))
    for n in range(PER_ADDRESS):
        direct.digests.subscriptions.subscribe(
            "victim@example.org", prefs, base_url=BASE_URL, client=f"198.51.100.{n}"
        )
    with pytest.raises(RateLimited) as refused:
        direct.digests.subscriptions.subscribe(
            "victim@example.org", prefs, base_url=BASE_URL, client="198.51.100.99"
        )
    assert refused.value.retry_after > 0
    time.sleep(0.3)
    assert len(smtp_server.to("victim@example.org")) == PER_ADDRESS
    # The same bucket as the account mails: a password-reset request for it is refused now too.
    with pytest.raises(RateLimited):
        direct.readers.accounts.request_password_reset(
            "victim@example.org", client="198.51.100.98", base_url=BASE_URL
        )


def _page_text(html: str) -> str:
    return _CSRF.sub("", html)


def test_the_reply_is_the_same_for_new_pending_and_confirmed_addresses(
    settings: Settings, direct: App, smtp_server: SmtpTestServer
) -> None:
    subscribe_active(direct, "active@example.org")
    with _client(settings) as client:
        pending = client.post("/digest", data=_form(client, "pending@example.org"), headers=HTML)
        replies = {
            email: client.post("/digest", data=_form(client, email), headers=HTML)
            for email in ("new@example.org", "pending@example.org", "active@example.org")
        }
    assert pending.status_code == 200
    assert {r.status_code for r in replies.values()} == {200}
    assert len({_page_text(r.text) for r in replies.values()}) == 1
    assert {k: v for k, v in replies["new@example.org"].headers.items() if k != "content-length"}.keys() == {
        k: v for k, v in replies["active@example.org"].headers.items() if k != "content-length"
    }.keys()


def test_mail_goes_out_after_the_reply(
    tmp_path: Path, smtp_server: SmtpTestServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Under real uvicorn, with the mail server never answering the message: the reply does not wait for it
    (before the fix it waited the whole SMTP timeout and then answered 503, only for addresses that got a
    mail).

    Decided by order, not by a stopwatch: the server hangs until released, and the mailer's timeout (60 s)
    outlasts the client's (30 s), so a reply that waited for the mail never comes. The reply must come while
    the mail has not failed yet; after it, the message reaches the server, and on release its failure is
    logged (nobody is waiting to be told).
    """
    settings = digest_settings(tmp_path / "data", smtp_server, base_url=None, smtp_timeout=60.0)
    smtp_server.hang("data")
    caplog.set_level(logging.ERROR, logger="paperfeed.digest")

    def mail_failures() -> list[str]:
        return [r.getMessage() for r in caplog.records if "confirmation mail to slow@" in r.getMessage()]

    with live_server(settings) as url, httpx.Client(base_url=url, timeout=30) as client:
        page = client.get("/digest", headers=HTML)
        found = _CSRF.search(page.text)
        assert found is not None
        form = {"csrf_token": found.group(1), "email": "slow@example.org", "sections": "trending"}
        reply = client.post("/digest", data=form, headers=HTML)
        assert reply.status_code == 200, reply.text[:400]
        assert "Check your inbox" in reply.text
        assert mail_failures() == []  # the mail is still under way (it cannot end before the release)
        smtp_server.wait_for_step("data", "slow@example.org")  # the message went out after the reply
        smtp_server.release()
        deadline = time.monotonic() + 30
        while not mail_failures() and time.monotonic() < deadline:
            time.sleep(0.05)
    assert len(mail_failures()) == 1, mail_failures()
    assert smtp_server.to("slow@example.org") == []
