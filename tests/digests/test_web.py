"""The subscription pages through the real app (TestClient), mail through the recording SMTP server."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.digest import SubscriptionStatus
from paperfeed.settings import Settings
from paperfeed.web import create_app
from paperfeed.web.security import SESSION_COOKIE
from tests.support.digests import BASE_URL, digest_settings, load_papers
from tests.support.smtp_server import SmtpTestServer

HTML = {"accept": "text/html"}
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture
def settings(tmp_path: Path, smtp_server: SmtpTestServer) -> Settings:
    return digest_settings(tmp_path / "data", smtp_server)


@pytest.fixture
def direct(settings: Settings) -> Iterator[App]:
    """The same store, for looking at what the pages did."""
    app = build_app(settings)
    load_papers(app)
    try:
        yield app
    finally:
        app.close()


@pytest.fixture
def client(settings: Settings, direct: App) -> Iterator[TestClient]:
    # https, as PAPERFEED_BASE_URL says: the CSRF cookie is Secure then
    with TestClient(create_app(lambda: build_app(settings)), base_url=BASE_URL, follow_redirects=False) as c:
        yield c


def csrf(client: TestClient, path: str = "/digest") -> str:
    page = client.get(path, headers=HTML)
    assert page.status_code == 200, page.text[:300]
    found = _CSRF.search(page.text)
    assert found is not None
    return found.group(1)


def form(email: str, token: str, **extra: str | list[str]) -> dict[str, str | list[str]]:
    values: dict[str, str | list[str]] = {
        "csrf_token": token,
        "email": email,
        "cadence": "weekdays",
        "send_hour": "8",
        "timezone": "Europe/Paris",
        "weekday": "0",
        "sections": ["trending", "categories"],
        "categories": "cs.CL, cs.LG",
        "max_items": "15",
    }
    values.update(extra)
    return values


def path_of(url: str) -> str:
    parts = urlsplit(url)
    assert url.startswith(BASE_URL)
    return f"{parts.path}?{parts.query}"


def test_subscribe_confirm_and_one_click_unsubscribe(
    client: TestClient, direct: App, smtp_server: SmtpTestServer
) -> None:
    reply = client.post("/digest", data=form("Reader@Example.org", csrf(client)), headers=HTML)
    assert reply.status_code == 200
    assert "Check your inbox" in reply.text
    sub = direct.digests.subscriptions.by_email("reader@example.org")
    assert sub is not None
    assert sub.status == SubscriptionStatus.pending
    prefs = sub.preferences
    assert (prefs.cadence.value, prefs.send_hour, prefs.timezone) == ("weekdays", 8, "Europe/Paris")
    assert prefs.categories == ("cs.CL", "cs.LG")
    (mail,) = smtp_server.wait_for(1)
    assert mail.to == "reader@example.org"
    assert mail.subject == "Confirm your paperfeed digest"
    (link,) = [u for u in mail.links() if "/digest/confirm" in u]
    assert mail.html is not None
    assert link.replace("&", "&amp;") in mail.html or link in mail.html
    # Opening the link changes nothing; its button does.
    page = client.get(path_of(link), headers=HTML)
    assert page.status_code == 200
    assert "Confirm the subscription" in page.text
    assert _status(direct) == SubscriptionStatus.pending
    token = parse_qs(urlsplit(link).query)["t"][0]
    done = client.post(
        "/digest/confirm", data={"t": token, "csrf_token": csrf(client, path_of(link))}, headers=HTML
    )
    assert done.status_code == 200
    assert "You are subscribed" in done.text
    assert _status(direct) == SubscriptionStatus.active

    # RFC 8058: the unsubscribe link's GET only asks; a bare POST with the one-click body unsubscribes,
    # with no cookie and no CSRF token (that is what mail providers send).
    unsub = direct.digests.subscriptions.links(sub, BASE_URL).unsubscribe
    asked = client.get(path_of(unsub), headers=HTML)
    assert asked.status_code == 200
    assert "Stop sending digests" in asked.text
    assert _status(direct) == SubscriptionStatus.active
    with TestClient(client.app, base_url=BASE_URL, follow_redirects=False) as provider:  # no cookies
        posted = provider.post(
            path_of(unsub),
            content=b"List-Unsubscribe=One-Click",
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert posted.status_code == 200
        assert "You are unsubscribed" in posted.text
        again = provider.post(path_of(unsub), content=b"List-Unsubscribe=One-Click")
        assert again.status_code == 200
    gone = direct.digests.subscriptions.by_email("reader@example.org")
    assert gone is not None
    assert gone.status == SubscriptionStatus.unsubscribed


def _status(app: App) -> SubscriptionStatus:
    found = app.digests.subscriptions.by_email("reader@example.org")
    assert found is not None
    return found.status


def test_subscribing_needs_the_csrf_token(client: TestClient, direct: App) -> None:
    csrf(client)
    reply = client.post("/digest", data=form("x@example.org", "forged"), headers=HTML)
    assert reply.status_code == 403
    assert direct.digests.subscriptions.by_email("x@example.org") is None


def test_bad_input_is_shown_on_the_form(client: TestClient, direct: App, smtp_server: SmtpTestServer) -> None:
    token = csrf(client)
    cases: list[tuple[dict[str, str | list[str]], str]] = [
        ({"email": "not-an-address"}, "Email: enter an address"),
        ({"timezone": "Mars/Base"}, "Time zone: unknown time zone"),
        ({"sections": []}, "Sections: choose at least one"),
        ({"categories": ""}, "Categories: name at least one category"),
        ({"send_hour": "noon"}, "Hour: a whole number"),
    ]
    for fields, text in cases:
        values = form("bad@example.org", token)
        values.update(fields)
        reply = client.post("/digest", data=values, headers=HTML)
        assert reply.status_code == 400, fields
        assert text in reply.text, (fields, reply.text[:2000])
    assert direct.digests.subscriptions.by_email("bad@example.org") is None
    assert smtp_server.messages == []


def test_subscribing_again_reveals_nothing_and_mails_the_owner(
    client: TestClient, direct: App, smtp_server: SmtpTestServer
) -> None:
    client.post("/digest", data=form("ada@example.org", csrf(client)), headers=HTML)
    (confirm,) = smtp_server.wait_for(1)
    token = parse_qs(urlsplit(confirm.links()[0]).query)["t"][0]
    direct.digests.subscriptions.confirm(token)
    sub = direct.digests.subscriptions.by_email("ada@example.org")
    assert sub is not None
    long_ago = datetime(2025, 1, 1, tzinfo=UTC)  # past the throttle on mails to one address
    direct.digests.records.update_subscription(sub.id, now=long_ago, confirm_sent_at=long_ago)
    # Someone else subscribes the same address: the same reply, and the owner gets a mail, not a change.
    with TestClient(client.app, base_url=BASE_URL) as stranger:
        reply = stranger.post("/digest", data=form("ada@example.org", "x"), headers=HTML)
        assert reply.status_code == 403  # no CSRF cookie: refused first
    again = client.post("/digest", data=form("ada@example.org", csrf(client), cadence="weekly"), headers=HTML)
    assert "Check your inbox" in again.text
    (_, notice) = smtp_server.wait_for(2)
    assert notice.subject == "Your paperfeed digest"
    assert any("/digest/preferences?t=" in u for u in notice.links())
    sub = direct.digests.subscriptions.by_email("ada@example.org")
    assert sub is not None
    assert sub.preferences.cadence.value == "weekdays"  # unchanged


def test_confirmation_mails_are_throttled(client: TestClient, smtp_server: SmtpTestServer) -> None:
    token = csrf(client)
    for _ in range(3):
        reply = client.post("/digest", data=form("spam-target@example.org", token), headers=HTML)
        assert "Check your inbox" in reply.text
    assert len(smtp_server.messages) == 1


def test_signed_in_verified_user_needs_no_confirmation(
    client: TestClient, direct: App, smtp_server: SmtpTestServer
) -> None:
    direct.readers.accounts.sign_up(
        "me@example.org", "correct horse battery", None, client="t", base_url=BASE_URL
    )
    smtp_server.wait_for(1)  # the account's own verification mail
    smtp_server.clear()
    stored = direct.readers.accounts.store.user_by_email("me@example.org")
    assert stored is not None
    direct.readers.accounts.store.mark_verified(stored.user.id, direct.readers.accounts.clock())
    user = direct.readers.accounts.user_by_email("me@example.org")
    client.cookies.set(SESSION_COOKIE, direct.readers.accounts.create_session(user).session)
    page = client.get("/digest", headers=HTML)
    assert 'value="me@example.org"' in page.text
    values = form("me@example.org", csrf(client), sections=["trending", "for_you"])
    reply = client.post("/digest", data=values, headers=HTML)
    assert reply.status_code == 200
    assert "You are subscribed" in reply.text
    sub = direct.digests.subscriptions.by_email("me@example.org")
    assert sub is not None
    assert (sub.status, sub.user_id) == (SubscriptionStatus.active, user.id)
    assert smtp_server.messages == []
    assert "Change it" in client.get("/digest", headers=HTML).text


def test_preferences_page_changes_settings(client: TestClient, direct: App) -> None:
    client.post("/digest", data=form("pref@example.org", csrf(client)), headers=HTML)
    sub = direct.digests.subscriptions.by_email("pref@example.org")
    assert sub is not None
    prefs_url = path_of(direct.digests.subscriptions.links(sub, BASE_URL).preferences)
    page = client.get(prefs_url, headers=HTML)
    assert page.status_code == 200
    assert "pref@example.org" in page.text
    token = parse_qs(urlsplit(prefs_url).query)["t"][0]
    values = form("", csrf(client, prefs_url), cadence="weekly", weekday="4", timezone="Asia/Tokyo", t=token)
    saved = client.post("/digest/preferences", data=values, headers=HTML)
    assert saved.status_code == 200
    assert "Saved." in saved.text
    after = direct.digests.subscriptions.by_email("pref@example.org")
    assert after is not None
    assert (after.preferences.cadence.value, after.preferences.weekday) == ("weekly", 4)
    assert after.preferences.timezone == "Asia/Tokyo"
    bad = client.post("/digest/preferences", data={**values, "max_items": "500"}, headers=HTML)
    assert bad.status_code == 400
    assert "Papers per mail" in bad.text


@pytest.mark.parametrize("path", ["/digest/confirm", "/digest/preferences", "/digest/unsubscribe"])
def test_broken_links_get_a_clear_page(client: TestClient, direct: App, path: str) -> None:
    for token in ("", "garbage", direct.mail.signer.sign("preferences", 99)):
        reply = client.get(f"{path}?t={token}", headers=HTML)
        assert reply.status_code == 400
        assert "This link does not work" in reply.text
    posted = client.post("/digest/unsubscribe?t=nope", content=b"List-Unsubscribe=One-Click")
    assert posted.status_code == 400


def test_an_unsubscribe_token_does_not_open_preferences(client: TestClient, direct: App) -> None:
    client.post("/digest", data=form("two@example.org", csrf(client)), headers=HTML)
    sub = direct.digests.subscriptions.by_email("two@example.org")
    assert sub is not None
    token = direct.mail.signer.sign("unsubscribe", sub.id)
    assert client.get(f"/digest/preferences?t={token}", headers=HTML).status_code == 400


def test_admin_jobs_page_is_for_admins(client: TestClient, direct: App) -> None:
    anonymous = client.get("/admin/jobs", headers=HTML)
    assert anonymous.status_code == 303
    assert anonymous.headers["location"].startswith("/signin")
    direct.readers.accounts.sign_up(
        "root@example.org", "correct horse battery", None, client="t", base_url=BASE_URL
    )
    direct.readers.accounts.set_role("root@example.org", "admin")
    admin = direct.readers.accounts.user_by_email("root@example.org")
    client.cookies.set(SESSION_COOKIE, direct.readers.accounts.create_session(admin).session)
    run_id = direct.core.job_runs.start_run(
        "daily", None, "manual", "elsewhere:1:1", direct.digests.sender.clock()
    )
    direct.core.job_runs.finish_run(
        run_id, "partial", [], "harvest-arxiv: unreachable", direct.digests.sender.clock()
    )
    page = client.get("/admin/jobs", headers=HTML)
    assert page.status_code == 200
    assert "Recent runs" in page.text
    assert "harvest-arxiv: unreachable" in page.text


def _admin_client(client: TestClient, direct: App) -> None:
    direct.readers.accounts.sign_up(
        "root@example.org", "correct horse battery", None, client="t", base_url=BASE_URL
    )
    direct.readers.accounts.set_role("root@example.org", "admin")
    admin = direct.readers.accounts.user_by_email("root@example.org")
    client.cookies.set(SESSION_COOKIE, direct.readers.accounts.create_session(admin).session)


def test_admin_jobs_page_changes_nothing_and_its_button_marks_dead_runs(
    client: TestClient, direct: App
) -> None:
    """A GET only shows (issue #13): a run whose process is gone stays "running" until the admin's POST."""
    import socket

    _admin_client(client, direct)
    gone = f"{socket.gethostname()}:{2**22 + 12345}:?"  # a pid above Linux's pid_max: no such process
    run_id = direct.core.job_runs.start_run("daily", None, "manual", gone, direct.digests.sender.clock())
    page = client.get("/admin/jobs", headers=HTML)
    assert page.status_code == 200
    assert "its process is gone" in page.text
    assert [r.status for r in direct.core.job_runs.runs(limit=5) if r.id == run_id] == ["running"]

    token = csrf(client, "/admin/jobs")
    refused = client.post("/admin/jobs/interrupt-dead", data={}, headers=HTML)
    assert refused.status_code == 403  # CSRF-checked
    done = client.post("/admin/jobs/interrupt-dead", data={"csrf_token": token}, headers=HTML)
    assert done.status_code == 303
    assert done.headers["location"] == "/admin/jobs?done=interrupted&n=1"
    assert [r.status for r in direct.core.job_runs.runs(limit=5) if r.id == run_id] == ["interrupted"]
    assert "Marked 1 run as interrupted." in client.get(done.headers["location"], headers=HTML).text
