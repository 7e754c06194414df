"""CSRF, rate limits, token revocation, session fixation, secrets at rest, cookies, XSS in display names."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, text

from paperfeed.adapters.store.schema_accounts import api_tokens, one_time_links, rate_limit_hits, sessions
from paperfeed.bootstrap import App
from paperfeed.services.accounts import RateLimits
from paperfeed.settings import Settings
from paperfeed.web.security import CSRF_COOKIE, SESSION_COOKIE

from .conftest import PASSWORD, Mailbox, browser, csrf_from, fill, quick_sign_in, sign_in, sign_up

# -- CSRF ------------------------------------------------------------------------------------------------


def _signed_in(site: TestClient, app: App, email: str = "kim@example.org") -> str:
    quick_sign_in(site, app, email)
    return csrf_from(site.get("/account", headers={"accept": "text/html"}).text)


def test_a_form_post_without_the_token_is_refused(site: TestClient, app: App) -> None:
    _signed_in(site, app)
    missing = site.post("/account/profile", data={"display_name": "pwned"}, headers={"accept": "text/html"})
    assert missing.status_code == 403
    assert "security token" in missing.text
    assert "<form" in missing.text
    wrong = site.post(
        "/account/profile",
        data={"display_name": "pwned", "csrf_token": "x" * 43},
        headers={"accept": "text/html"},
    )
    assert wrong.status_code == 403
    assert app.readers.accounts.user_by_email("kim@example.org").display_name is None


def test_json_errors_for_api_clients(site: TestClient, app: App) -> None:
    _signed_in(site, app)
    reply = site.post("/api/tokens", json={"name": "x"})
    assert reply.status_code == 403
    assert reply.json()["status"] == 403
    assert "X-CSRF-Token" in reply.json()["error"]


def test_a_token_from_another_session_is_refused(
    site: TestClient, app: App, new_browser: Callable[[], TestClient]
) -> None:
    _signed_in(site, app)
    attacker = new_browser()
    their_token = csrf_from(attacker.get("/signin", headers={"accept": "text/html"}).text)
    reply = site.post("/account/profile", data={"display_name": "pwned", "csrf_token": their_token})
    assert reply.status_code == 403


def test_the_token_changes_at_sign_in(site: TestClient, mailbox: Mailbox) -> None:
    sign_up(site, mailbox, "lou@example.org")
    before = csrf_from(site.get("/signin", headers={"accept": "text/html"}).text)
    sign_in(site, "lou@example.org")
    after = csrf_from(site.get("/account", headers={"accept": "text/html"}).text)
    assert before != after
    stale = site.post("/account/profile", data={"display_name": "x", "csrf_token": before})
    assert stale.status_code == 403


@pytest.mark.parametrize(
    "headers",
    [{"origin": "https://evil.example"}, {"sec-fetch-site": "cross-site"}, {"origin": "null"}],
    ids=["foreign-origin", "sec-fetch-site", "null-origin"],
)
def test_cross_site_posts_are_refused_even_with_a_token(
    site: TestClient, app: App, headers: dict[str, str]
) -> None:
    token = _signed_in(site, app)
    reply = site.post(
        "/account/profile",
        data={"display_name": "x", "csrf_token": token},
        headers={"accept": "text/html", **headers},
    )
    assert reply.status_code == 403
    assert "Cross-site request refused" in reply.text
    same = site.post(
        "/account/profile",
        data={"display_name": "x", "csrf_token": token},
        headers={"origin": "http://testserver", "sec-fetch-site": "same-origin"},
    )
    assert same.status_code == 303


def test_bearer_only_requests_need_no_csrf_token(site: TestClient, app: App, settings: Settings) -> None:
    _signed_in(site, app)
    created = fill(site, "/account", "/account/tokens", {"name": "ci"})
    token = created.text.split('id="new-token">')[1].split("<")[0]
    spare = app.readers.accounts.create_api_token(
        app.readers.accounts.user_by_email("kim@example.org"), "spare"
    )[0]
    with browser(settings) as script:  # no cookies at all
        reply = script.delete(f"/api/tokens/{spare.id}", headers={"authorization": f"Bearer {token}"})
        assert reply.status_code == 204, reply.text
        # a cookie alongside the token brings CSRF back: the cookie could be ambient
        script.cookies.set(SESSION_COOKIE, "anything")
        again = script.delete(f"/api/tokens/{spare.id}", headers={"authorization": f"Bearer {token}"})
        assert again.status_code == 403
        assert "security token" in again.json()["error"]


def test_no_state_changes_on_get(site: TestClient) -> None:
    for path in (
        "/signout",
        "/account/signout-everywhere",
        "/account/tokens",
        "/admin/papers/hide",
        "/verify/resend",
    ):
        assert site.get(path).status_code in (404, 405), path


# -- rate limits ---------------------------------------------------------------------------------------------


def test_sign_in_is_limited_per_account(site: TestClient, mailbox: Mailbox, app: App) -> None:
    sign_up(site, mailbox, "max@example.org")
    limit = RateLimits().signin_account.count
    for _ in range(limit):
        assert (
            fill(
                site, "/signin", "/signin", {"email": "max@example.org", "password": "guess guess"}
            ).status_code
            == 400
        )
    blocked = fill(site, "/signin", "/signin", {"email": "max@example.org", "password": PASSWORD})
    assert blocked.status_code == 429
    assert 0 < int(blocked.headers["retry-after"]) <= 15 * 60
    assert "Too many attempts" in blocked.text
    # another account from the same address is not locked
    sign_up(site, mailbox, "ned@example.org")
    sign_in(site, "ned@example.org")
    # the window slides: move the failures 15 minutes into the past and the right password works again
    with app.core.store.engine.begin() as conn:
        conn.execute(rate_limit_hits.update().values(at=rate_limit_hits.c.at - 15 * 60 - 1))
    sign_in(site, "max@example.org")


def test_a_successful_sign_in_does_not_count_as_a_failure(app: App, mailbox: Mailbox) -> None:
    from dataclasses import replace

    from paperfeed.domain.accounts import InvalidCredentials, RateLimited
    from paperfeed.services.accounts import Limit

    service = replace(app.readers.accounts, limits=RateLimits(signin_account=Limit(2, 900)))
    service.sign_up("ola@example.org", PASSWORD, None, client="c", base_url="http://x")
    service.store.mark_verified(service.user_by_email("ola@example.org").id, service.clock())
    for _ in range(3):
        service.sign_in("ola@example.org", PASSWORD, client="c", base_url="http://x")
    with pytest.raises(InvalidCredentials):
        service.sign_in("ola@example.org", "wrong one", client="c", base_url="http://x")
    service.sign_in("ola@example.org", PASSWORD, client="c", base_url="http://x")
    with pytest.raises(InvalidCredentials):
        service.sign_in("ola@example.org", "wrong two", client="c", base_url="http://x")
    with pytest.raises(RateLimited) as limited:
        service.sign_in("ola@example.org", PASSWORD, client="c", base_url="http://x")
    assert 890 <= limited.value.retry_after <= 900


def test_sign_in_is_limited_per_client_address(site: TestClient, mailbox: Mailbox, app: App) -> None:
    limit = RateLimits().signin_ip.count
    page = site.get("/signin", headers={"accept": "text/html"})
    token = csrf_from(page.text)
    for i in range(limit):  # (not addresses at all: no password check to wait for, the count is the same)
        reply = site.post("/signin", data={"email": f"p{i}", "password": "nope nope", "csrf_token": token})
        assert reply.status_code == 400
    blocked = site.post("/signin", data={"email": "new@example.org", "password": "x", "csrf_token": token})
    assert blocked.status_code == 429
    assert int(blocked.headers["retry-after"]) > 0
    # the limit lives in the database: a second app process (another worker) sees the same count
    with browser(app.settings) as worker_two:
        other = fill(worker_two, "/signin", "/signin", {"email": "q@example.org", "password": "nope nope"})
        assert other.status_code == 429


def test_sign_up_is_limited_per_client_address(site: TestClient) -> None:
    limit = RateLimits().signup_ip.count
    for i in range(limit):
        assert fill(site, "/signup", "/signup", {"email": f"s{i}@example.org"}).status_code == 200
    blocked = fill(site, "/signup", "/signup", {"email": "one-more@example.org", "password": PASSWORD})
    assert blocked.status_code == 429
    assert "retry-after" in blocked.headers


def test_mail_requests_are_limited_per_account(site: TestClient, mailbox: Mailbox) -> None:
    sign_up(site, mailbox, "pia@example.org")  # one mail to the address already
    for _ in range(RateLimits().mail_account.count - 1):
        assert fill(site, "/forgot", "/forgot", {"email": "pia@example.org"}).status_code == 200
    assert fill(site, "/forgot", "/forgot", {"email": "pia@example.org"}).status_code == 429
    # sign-ups naming the address count too: nobody can flood an inbox through the sign-up form
    assert fill(site, "/signup", "/signup", {"email": "pia@example.org"}).status_code == 429


# -- tokens and sessions -------------------------------------------------------------------------------


def test_revoked_token_fails_at_once(site: TestClient, app: App, settings: Settings) -> None:
    _signed_in(site, app)
    token_csrf = csrf_from(site.get("/account", headers={"accept": "text/html"}).text)
    made = site.post("/api/tokens", json={"name": "cli"}, headers={"x-csrf-token": token_csrf})
    assert made.status_code == 201
    body = made.json()
    assert body["token"].startswith("pf_")
    assert body["prefix"] == body["token"][:10]
    listed = site.get("/api/tokens").json()
    assert [t["name"] for t in listed] == ["cli"]
    assert "token" not in listed[0]
    with browser(settings) as script:
        auth = {"authorization": f"Bearer {body['token']}"}
        assert script.get("/api/me", headers=auth).json()["email"] == "kim@example.org"
        assert (
            site.delete(f"/api/tokens/{body['id']}", headers={"x-csrf-token": token_csrf}).status_code == 204
        )
        gone = script.get("/api/me", headers=auth)
        assert gone.status_code == 401
        assert "revoked" in gone.json()["error"]
        assert script.get("/api/me", headers={"authorization": "Bearer pf_made-up"}).status_code == 401


def test_session_fixation_a_planted_session_id_is_replaced(
    site: TestClient, mailbox: Mailbox, app: App
) -> None:
    sign_up(site, mailbox, "rae@example.org")
    planted = "attacker-chosen-session-id"
    site.get("/signin", headers={"accept": "text/html"})
    domain = next(c.domain for c in site.cookies.jar if c.name == CSRF_COOKIE)
    site.cookies.set(SESSION_COOKIE, planted, domain=domain, path="/")  # planted before the victim signs in
    sign_in(site, "rae@example.org")
    issued = site.cookies.get(SESSION_COOKIE)
    assert issued
    assert issued != planted
    assert app.readers.accounts.user_for_session(planted) is None
    assert app.readers.accounts.user_for_session(issued) is not None


def test_each_sign_in_gets_a_new_session_and_the_old_one_ends(
    site: TestClient, mailbox: Mailbox, app: App
) -> None:
    sign_up(site, mailbox, "sam@example.org")
    sign_in(site, "sam@example.org")
    first = site.cookies.get(SESSION_COOKIE)
    sign_in(site, "sam@example.org")
    second = site.cookies.get(SESSION_COOKIE)
    assert first
    assert second
    assert first != second
    assert app.readers.accounts.user_for_session(first) is None


def test_secrets_are_stored_hashed(site: TestClient, mailbox: Mailbox, app: App) -> None:
    sign_up(site, mailbox, "kim@example.org")
    sign_in(site, "kim@example.org")
    session = site.cookies.get(SESSION_COOKIE)
    assert session
    made = fill(site, "/account", "/account/tokens", {"name": "x"})
    token = made.text.split('id="new-token">')[1].split("<")[0]
    fill(site, "/forgot", "/forgot", {"email": "kim@example.org"})
    link = mailbox.link("kim@example.org", "reset", "/reset").split("token=")[1]
    with app.core.store.engine.connect() as conn:
        dump = "\n".join(
            str(row)
            for table in (sessions, api_tokens, one_time_links)
            for row in conn.execute(select(table)).all()
        )
        password_hash = conn.execute(text("SELECT password_hash FROM users")).scalar_one()
    for secret in (session, token, link, PASSWORD):
        assert secret not in dump
    assert password_hash.startswith("$argon2id$")
    import hashlib

    assert hashlib.sha256(session.encode()).hexdigest() in dump


def test_cookie_flags(site: TestClient, mailbox: Mailbox) -> None:
    sign_up(site, mailbox, "tia@example.org")
    reply = fill(site, "/signin", "/signin", {"email": "tia@example.org", "password": PASSWORD})
    cookie = next(c for c in reply.headers.get_list("set-cookie") if c.startswith(SESSION_COOKIE))
    assert "HttpOnly" in cookie
    assert "SameSite=lax" in cookie
    assert "Path=/" in cookie
    assert "Secure" not in cookie  # plain http in this test: a Secure cookie would never come back


def test_cookies_are_secure_when_the_site_is_https(
    site: TestClient, mailbox: Mailbox, settings: Settings
) -> None:
    sign_up(site, mailbox, "uma@example.org")
    secure = settings.model_copy(update={"base_url": "https://papers.example.org"})
    with browser(secure) as client:
        page = client.get("/signin", headers={"accept": "text/html"})
        csrf_cookie = next(c for c in page.headers.get_list("set-cookie") if c.startswith(CSRF_COOKIE))
        assert "Secure" in csrf_cookie
        assert "HttpOnly" in csrf_cookie
        # (an http test client would not send a Secure cookie back: post the token with the cookie by hand)
        reply = client.post(
            "/signin",
            data={"email": "uma@example.org", "password": PASSWORD, "csrf_token": csrf_from(page.text)},
            headers={"cookie": f"{CSRF_COOKIE}={page.cookies[CSRF_COOKIE]}"},
        )
        assert reply.status_code == 303, reply.text
        session = next(c for c in reply.headers.get_list("set-cookie") if c.startswith(SESSION_COOKIE))
        assert "Secure" in session
        assert "HttpOnly" in session


# -- XSS -----------------------------------------------------------------------------------------------------


def test_display_names_are_escaped_everywhere(site: TestClient, mailbox: Mailbox, app: App) -> None:
    hostile = '<script>alert("name")</script><img src=x onerror=alert(1)>\u202eevil'
    sign_up(site, mailbox, "vic@example.org", name=hostile)
    app.readers.accounts.set_role("vic@example.org", "admin")
    sign_in(site, "vic@example.org")
    for path in ("/", "/account", "/admin", "/trending"):
        page = site.get(path, headers={"accept": "text/html"})
        assert page.status_code == 200, path
        assert "<script>alert" not in page.text, path
        assert "<img src=x" not in page.text, path
        assert "&lt;script&gt;alert(" in page.text, path
        assert "\u202e" not in page.text  # bidi override dropped when the name was saved
        assert "script-src 'self'" in page.headers["content-security-policy"]
