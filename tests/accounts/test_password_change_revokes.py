"""Issue #12, findings 2 and 3: what a password change or reset must end.

A new password is what a person does when they fear someone else holds their credentials, so it revokes
every API token, stops every outstanding sign-in and reset link, and (a reset) signs out every session.
A Bearer token cannot mint more tokens (which would outlive its own revocation).
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from paperfeed.settings import Settings

from .conftest import PASSWORD, Mailbox, browser, fill, sign_in, sign_up


def _new_token(client: TestClient, name: str = "script") -> str:
    created = fill(client, "/account", "/account/tokens", {"name": name})
    assert created.status_code == 201, created.text
    return created.text.split('id="new-token">')[1].split("<")[0]


def _works(client: TestClient, token: str) -> bool:
    status = client.get("/api/me", headers={"authorization": f"Bearer {token}"}).status_code
    assert status in (200, 401)
    return status == 200


def _reset(client: TestClient, mailbox: Mailbox, email: str, password: str) -> str:
    """Ask for a reset link and use it; returns the link."""
    fill(client, "/forgot", "/forgot", {"email": email})
    link = mailbox.link(email, "reset", "/reset")
    done = fill(client, link, "/reset", {"token": link.split("token=", 1)[1], "password": password})
    assert done.status_code == 303, done.text
    return link


# -- finding 2: API tokens -------------------------------------------------------------------------------


def test_a_password_reset_revokes_every_api_token(
    site: TestClient, mailbox: Mailbox, new_browser: Callable[[], TestClient]
) -> None:
    sign_up(site, mailbox, "tia@example.org")
    sign_in(site, "tia@example.org")
    token = _new_token(site)
    assert _works(site, token)
    _reset(new_browser(), mailbox, "tia@example.org", "a fresh password")
    assert not _works(new_browser(), token)


def test_a_password_change_revokes_every_api_token(site: TestClient, mailbox: Mailbox) -> None:
    sign_up(site, mailbox, "uma@example.org")
    sign_in(site, "uma@example.org")
    token = _new_token(site)
    changed = fill(site, "/account", "/account/password", {"current": PASSWORD, "password": "another one"})
    assert changed.status_code == 303
    assert not _works(site, token)
    page = site.get(changed.headers["location"], headers={"accept": "text/html"})
    assert "API tokens were revoked" in page.text
    assert "No tokens yet" in page.text


def test_the_pages_say_a_new_password_revokes_tokens(site: TestClient, mailbox: Mailbox) -> None:
    sign_up(site, mailbox, "val@example.org")
    sign_in(site, "val@example.org")
    account = site.get("/account", headers={"accept": "text/html"})
    assert "revokes every API token" in account.text
    fill(site, "/forgot", "/forgot", {"email": "val@example.org"})
    link = mailbox.link("val@example.org", "reset", "/reset")
    reset_page = site.get(link, headers={"accept": "text/html"})
    assert "every API token is revoked" in reset_page.text


def test_a_bearer_token_cannot_create_tokens(site: TestClient, mailbox: Mailbox, settings: Settings) -> None:
    sign_up(site, mailbox, "wes@example.org")
    sign_in(site, "wes@example.org")
    token = _new_token(site)
    bearer = {"authorization": f"Bearer {token}"}
    with browser(settings) as script:  # no cookies: a script holding only the token
        api = script.post("/api/tokens", json={"name": "child"}, headers=bearer)
        assert api.status_code == 403, api.text
        assert "API token cannot create API tokens" in api.json()["error"]
        page = script.post(
            "/account/tokens", data={"name": "child"}, headers={"accept": "text/html", **bearer}
        )
        assert page.status_code == 403
        assert "API token cannot create API tokens" in page.text
        # nor set a password and so turn into a full sign-in
        pw = script.post("/account/password", data={"password": "token made this"}, headers=bearer)
        assert pw.status_code == 403
    listed = site.get("/api/tokens").json()
    assert [t["name"] for t in listed] == ["script"]
    # revoking the one token leaves nothing behind that it made
    revoked = fill(site, "/account", f"/account/tokens/{listed[0]['id']}/revoke", {})
    assert revoked.status_code == 303
    assert not _works(site, token)


# -- finding 3: outstanding links ------------------------------------------------------------------------


def test_a_password_change_stops_outstanding_sign_in_and_reset_links(
    site: TestClient, mailbox: Mailbox, new_browser: Callable[[], TestClient]
) -> None:
    sign_up(site, mailbox, "xan@example.org")
    sign_in(site, "xan@example.org")
    thief = new_browser()  # someone who can read the mailbox, or found an old mail
    fill(thief, "/signin", "/signin/email", {"email": "xan@example.org"})
    fill(thief, "/forgot", "/forgot", {"email": "xan@example.org"})
    signin_link = mailbox.link("xan@example.org", "sign-in link", "/signin/link")
    reset_link = mailbox.link("xan@example.org", "reset", "/reset")
    changed = fill(site, "/account", "/account/password", {"current": PASSWORD, "password": "changed it now"})
    assert changed.status_code == 303
    assert thief.get(signin_link).status_code == 400
    used = fill(thief, "/signin", "/signin/link", {"token": signin_link.split("token=", 1)[1]})
    assert used.status_code == 400
    assert thief.get("/api/me").status_code == 401
    assert thief.get(reset_link).status_code == 400
    reset = fill(
        thief, "/signin", "/reset", {"token": reset_link.split("token=", 1)[1], "password": "mine now!"}
    )
    assert reset.status_code == 400
    sign_in(new_browser(), "xan@example.org", "changed it now")


def test_a_password_reset_stops_outstanding_links_and_every_session(
    site: TestClient, mailbox: Mailbox, new_browser: Callable[[], TestClient]
) -> None:
    sign_up(site, mailbox, "yul@example.org")
    sign_in(site, "yul@example.org")
    thief = new_browser()
    fill(thief, "/signin", "/signin/email", {"email": "yul@example.org"})
    signin_link = mailbox.link("yul@example.org", "sign-in link", "/signin/link")
    _reset(new_browser(), mailbox, "yul@example.org", "a reset password")
    used = fill(thief, "/signin", "/signin/link", {"token": signin_link.split("token=", 1)[1]})
    assert used.status_code == 400
    assert thief.get("/api/me").status_code == 401
    assert site.get("/api/me").status_code == 401  # "sign out everywhere" is part of a reset
