"""Sign-up, confirmation, sign-in (password and mailed link), reset, sign-out: through the pages, with the
links read from mail that a real SMTP server received."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from paperfeed.bootstrap import App
from paperfeed.web.security import SESSION_COOKIE

from .conftest import PASSWORD, Mailbox, fill, sign_in, sign_up


def _me(client: TestClient) -> int:
    return client.get("/api/me").status_code


def test_sign_up_confirm_sign_in_sign_out(site: TestClient, mailbox: Mailbox, app: App) -> None:
    reply = fill(site, "/signup", "/signup", {"email": "Ann@Example.org", "password": PASSWORD})
    assert reply.status_code == 200
    assert "Check your inbox" in reply.text
    assert SESSION_COOKIE not in site.cookies  # signing up does not sign in before the address is proven

    # Unconfirmed: the right password is refused until the address is confirmed, and a new link is sent.
    refused = fill(site, "/signin", "/signin", {"email": "ann@example.org", "password": PASSWORD})
    assert refused.status_code == 403
    assert "Confirm your email address first" in refused.text
    assert len(mailbox.wait("ann@example.org", "confirm your email", count=2)) == 2

    link = mailbox.link("ann@example.org", "confirm your email", "/verify")
    page = site.get(link)
    assert page.status_code == 200
    assert "Confirm my email address" in page.text
    assert not app.readers.accounts.user_by_email("ann@example.org").email_verified  # a GET changes nothing
    done = fill(site, link, "/verify", {"token": link.split("token=")[1]})
    assert done.status_code == 303
    assert done.headers["location"] == "/signin?done=verified"
    assert app.readers.accounts.user_by_email("ann@example.org").email_verified

    signed = fill(
        site,
        "/signin?next=/trending",
        "/signin",
        {"email": "ann@example.org", "password": PASSWORD, "next": "/trending"},
    )
    assert signed.status_code == 303
    assert signed.headers["location"] == "/trending"
    assert _me(site) == 200
    home = site.get("/", headers={"accept": "text/html"})
    assert "Sign out" in home.text
    assert 'href="/signin' not in home.text

    out = fill(site, "/account", "/signout", {})
    assert out.status_code == 303
    assert _me(site) == 401
    assert 'href="/signin' in site.get("/", headers={"accept": "text/html"}).text


def test_confirmation_link_works_once(site: TestClient, mailbox: Mailbox) -> None:
    fill(site, "/signup", "/signup", {"email": "bo@example.org", "password": PASSWORD})
    link = mailbox.link("bo@example.org", "confirm your email", "/verify")
    token = link.split("token=")[1]
    assert fill(site, link, "/verify", {"token": token}).status_code == 303
    again = fill(site, "/signin", "/verify", {"token": token})
    assert again.status_code == 400
    assert "invalid or has expired" in again.text
    assert site.get(link).status_code == 400


def test_sign_up_with_a_taken_address_says_the_same_and_mails_the_owner(
    site: TestClient, mailbox: Mailbox
) -> None:
    sign_up(site, mailbox, "cy@example.org")
    reply = fill(site, "/signup", "/signup", {"email": "cy@example.org", "password": "another password"})
    assert reply.status_code == 200
    assert "Check your inbox" in reply.text
    text = mailbox.wait("cy@example.org", "already have")[0]
    assert "/forgot" in text
    sign_in(site, "cy@example.org")  # the old password still works: nothing was overwritten


def test_sign_in_link_signs_in_once_and_confirms_the_address(
    site: TestClient, mailbox: Mailbox, new_browser: Callable[[], TestClient], app: App
) -> None:
    fill(site, "/signup", "/signup", {"email": "dee@example.org", "password": ""})  # links only
    other = new_browser()
    sent = fill(other, "/signin", "/signin/email", {"email": "dee@example.org"})
    assert sent.status_code == 200
    assert "Check your inbox" in sent.text
    link = mailbox.link("dee@example.org", "sign-in link", "/signin/link")
    assert other.get(link).status_code == 200
    assert _me(other) == 401  # opening the link is not using it
    used = fill(other, link, "/signin/link", {"token": link.split("token=")[1]})
    assert used.status_code == 303
    assert _me(other) == 200
    assert app.readers.accounts.user_by_email("dee@example.org").email_verified
    third = new_browser()
    assert fill(third, "/signin", "/signin/link", {"token": link.split("token=")[1]}).status_code == 400
    assert _me(third) == 401


def test_sign_in_link_expires(site: TestClient, mailbox: Mailbox, app: App) -> None:
    from datetime import timedelta

    sign_up(site, mailbox, "eli@example.org")
    fill(site, "/signin", "/signin/email", {"email": "eli@example.org"})
    link = mailbox.link("eli@example.org", "sign-in link", "/signin/link")
    # The site's own service reads the clock; move the store's copy of the link into the past instead.
    from sqlalchemy import update

    from paperfeed.adapters.store.schema_accounts import one_time_links

    with app.core.store.engine.begin() as conn:
        conn.execute(
            update(one_time_links).values(expires_at=app.readers.accounts.clock() - timedelta(seconds=1))
        )
    assert site.get(link).status_code == 400
    assert fill(site, "/signin", "/signin/link", {"token": link.split("token=")[1]}).status_code == 400
    assert _me(site) == 401


def test_unknown_addresses_get_the_same_replies(site: TestClient, mailbox: Mailbox) -> None:
    sign_up(site, mailbox, "fay@example.org")
    for action, page in (("/forgot", "/forgot"), ("/signin/email", "/signin")):
        known = fill(site, page, action, {"email": "fay@example.org"})
        unknown = fill(site, page, action, {"email": "nobody@example.org"})
        assert known.status_code == unknown.status_code == 200
        assert known.text.replace("fay@example.org", "X") == unknown.text.replace("nobody@example.org", "X")
    wrong_password = fill(
        site, "/signin", "/signin", {"email": "fay@example.org", "password": "wrong password"}
    )
    no_account = fill(
        site, "/signin", "/signin", {"email": "nobody@example.org", "password": "wrong password"}
    )
    assert wrong_password.status_code == no_account.status_code == 400
    assert "do not match an account" in wrong_password.text
    assert "do not match an account" in no_account.text
    mailbox.wait("fay@example.org", "reset")
    assert mailbox.subjects("nobody@example.org") == []


def test_password_reset_signs_out_every_other_session(
    site: TestClient, mailbox: Mailbox, new_browser: Callable[[], TestClient]
) -> None:
    sign_up(site, mailbox, "gus@example.org")
    sign_in(site, "gus@example.org")
    laptop = new_browser()
    sign_in(laptop, "gus@example.org")
    assert _me(site) == _me(laptop) == 200

    phone = new_browser()
    fill(phone, "/forgot", "/forgot", {"email": "gus@example.org"})
    link = mailbox.link("gus@example.org", "reset", "/reset")
    token = link.split("token=")[1]
    short = fill(phone, link, "/reset", {"token": token, "password": "short"})
    assert short.status_code == 400
    assert "at least 8" in short.text
    done = fill(phone, link, "/reset", {"token": token, "password": "a brand new password"})
    assert done.status_code == 303
    assert done.headers["location"] == "/account?done=reset"
    assert _me(phone) == 200
    assert _me(site) == _me(laptop) == 401
    assert (
        fill(
            new_browser(), "/signin", "/signin", {"email": "gus@example.org", "password": PASSWORD}
        ).status_code
        == 400
    )
    sign_in(new_browser(), "gus@example.org", "a brand new password")
    assert (
        fill(phone, "/signin", "/reset", {"token": token, "password": "yet another one"}).status_code == 400
    )


def test_change_password_keeps_this_session_only(
    site: TestClient, mailbox: Mailbox, new_browser: Callable[[], TestClient]
) -> None:
    sign_up(site, mailbox, "hal@example.org")
    sign_in(site, "hal@example.org")
    other = new_browser()
    sign_in(other, "hal@example.org")
    wrong = fill(
        site, "/account", "/account/password", {"current": "not it at all", "password": "new password 1"}
    )
    assert wrong.status_code == 400
    assert "current password" in wrong.text
    ok = fill(site, "/account", "/account/password", {"current": PASSWORD, "password": "new password 1"})
    assert ok.status_code == 303
    assert _me(site) == 200
    assert _me(other) == 401


def test_sign_out_everywhere_and_optionally_tokens(
    site: TestClient, mailbox: Mailbox, new_browser: Callable[[], TestClient]
) -> None:
    sign_up(site, mailbox, "ida@example.org")
    sign_in(site, "ida@example.org")
    created = fill(site, "/account", "/account/tokens", {"name": "script"})
    token = created.text.split('id="new-token">')[1].split("<")[0]
    other = new_browser()
    sign_in(other, "ida@example.org")
    bearer = {"authorization": f"Bearer {token}"}
    assert other.get("/api/me", headers=bearer).status_code == 200

    out = fill(site, "/account", "/account/signout-everywhere", {})
    assert out.status_code == 303
    assert _me(site) == _me(other) == 401
    assert other.get("/api/me", headers=bearer).status_code == 200  # tokens kept unless asked

    sign_in(site, "ida@example.org")
    fill(site, "/account", "/account/signout-everywhere", {"revoke_tokens": "1"})
    assert other.get("/api/me", headers=bearer).status_code == 401


def test_display_name_and_header_menu(site: TestClient, mailbox: Mailbox) -> None:
    sign_up(site, mailbox, "jo@example.org", name="Jo  Example")
    sign_in(site, "jo@example.org")
    page = site.get("/account", headers={"accept": "text/html"})
    assert "<bdi>Jo Example</bdi>" in page.text
    fill(site, "/account", "/account/profile", {"display_name": "Joanna"})
    assert "<bdi>Joanna</bdi>" in site.get("/", headers={"accept": "text/html"}).text


def test_account_page_needs_sign_in(site: TestClient) -> None:
    page = site.get("/account?x=1", headers={"accept": "text/html"})
    assert page.status_code == 303
    assert page.headers["location"] == "/signin?next=/account%3Fx%3D1"
    assert site.get("/api/me").status_code == 401
    form = site.get("/signin?next=https://evil.example/", headers={"accept": "text/html"})
    assert 'name="next" value="/"' in form.text  # no open redirect
