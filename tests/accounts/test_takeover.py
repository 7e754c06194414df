"""Issue #12, finding 1: an account taken over before its owner signs up.

An attacker signs up with someone else's address and a password of their choosing; the account stays
unconfirmed. Whatever proves the address later (a sign-in link, the confirmation link the attacker's
sign-up mailed to the owner, a reset) must not leave the attacker's password working, and the owner must
then be able to set a password without knowing one. Every flow runs through the pages with links read from
mail a real SMTP server received; one runs over real HTTP (uvicorn on loopback, httpx, no TestClient).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App
from paperfeed.settings import Settings
from tests.support.live_server import live_server

from .conftest import PASSWORD, Mailbox, csrf_from, fill, sign_in

VICTIM = "victim@example.org"
ATTACKERS = "attacker's own password"
OWNERS = "the owner's new password"


def _signs_in(client: TestClient, email: str, password: str) -> bool:
    reply = fill(client, "/signin", "/signin", {"email": email, "password": password})
    assert reply.status_code in (303, 400, 403), reply.text
    return reply.status_code == 303


def _attacker_signs_up(attacker: TestClient) -> None:
    reply = fill(attacker, "/signup", "/signup", {"email": VICTIM, "password": ATTACKERS})
    assert reply.status_code == 200, reply.text
    assert not _signs_in(attacker, VICTIM, ATTACKERS)  # unconfirmed: refused (and a new link is mailed)


def _follow(client: TestClient, link: str, action: str) -> TestClient:
    used = fill(client, link, action, {"token": link.split("token=", 1)[1]})
    assert used.status_code == 303, used.text
    return client


def _owner_sets_a_password(owner: TestClient) -> None:
    page = owner.get("/account", headers={"accept": "text/html"})
    assert page.status_code == 200
    assert "Set a password" in page.text
    assert 'name="current"' not in page.text  # no previous password to know
    done = fill(owner, "/account", "/account/password", {"password": OWNERS})
    assert done.status_code == 303, done.text


def test_a_sign_in_link_drops_a_password_set_before_the_address_was_proven(
    new_browser: Callable[[], TestClient], mailbox: Mailbox, app: App
) -> None:
    attacker, owner = new_browser(), new_browser()
    _attacker_signs_up(attacker)

    assert fill(owner, "/signin", "/signin/email", {"email": VICTIM}).status_code == 200
    _follow(owner, mailbox.link(VICTIM, "sign-in link", "/signin/link"), "/signin/link")
    assert owner.get("/api/me").json()["email"] == VICTIM
    assert app.readers.accounts.user_by_email(VICTIM).email_verified

    assert not _signs_in(new_browser(), VICTIM, ATTACKERS)  # the attacker's password is gone
    _owner_sets_a_password(owner)
    assert _signs_in(new_browser(), VICTIM, OWNERS)
    assert not _signs_in(new_browser(), VICTIM, ATTACKERS)


def test_the_attackers_confirmation_mail_clicked_by_the_owner_drops_the_password(
    new_browser: Callable[[], TestClient], mailbox: Mailbox, app: App
) -> None:
    attacker, owner = new_browser(), new_browser()
    _attacker_signs_up(attacker)

    # The owner finds a confirmation mail they did not ask for and clicks it, in their own browser.
    link = mailbox.link(VICTIM, "confirm your email", "/verify", index=0)
    used = fill(owner, link, "/verify", {"token": link.split("token=", 1)[1]})
    assert used.status_code == 303, used.text
    assert app.readers.accounts.user_by_email(VICTIM).email_verified
    assert not _signs_in(attacker, VICTIM, ATTACKERS)
    assert not _signs_in(new_browser(), VICTIM, ATTACKERS)

    # The click proved the address, so it signed the owner in; they choose their own password.
    assert used.headers["location"].startswith("/account")
    page = owner.get(used.headers["location"], headers={"accept": "text/html"})
    assert "password given at sign-up was not kept" in page.text
    _owner_sets_a_password(owner)
    assert _signs_in(new_browser(), VICTIM, OWNERS)


def test_every_outstanding_confirmation_link_is_dropped_once_the_address_is_proven(
    new_browser: Callable[[], TestClient], mailbox: Mailbox
) -> None:
    attacker, owner = new_browser(), new_browser()
    _attacker_signs_up(attacker)  # two confirmation mails: the sign-up's and the refused sign-in's
    mailbox.wait(VICTIM, "confirm your email", count=2)
    first, second = (mailbox.link(VICTIM, "confirm your email", "/verify", index=i) for i in (0, 1))
    _follow(owner, first, "/verify")
    assert new_browser().get(second).status_code == 400
    stale = fill(new_browser(), "/signin", "/verify", {"token": second.split("token=", 1)[1]})
    assert stale.status_code == 400


def test_confirming_in_the_browser_that_signed_up_keeps_the_password(
    new_browser: Callable[[], TestClient], mailbox: Mailbox
) -> None:
    me = new_browser()
    fill(me, "/signup", "/signup", {"email": "own@example.org", "password": PASSWORD})
    link = mailbox.link("own@example.org", "confirm your email", "/verify")
    done = _follow(me, link, "/verify")
    assert done.get("/api/me").status_code == 401  # as before: confirm, then sign in with the password
    assert _signs_in(new_browser(), "own@example.org", PASSWORD)


def test_confirming_in_a_browser_that_proved_the_password_keeps_it(
    new_browser: Callable[[], TestClient], mailbox: Mailbox
) -> None:
    """Sign up on a laptop, sign in with the password on the phone, confirm there: kept."""
    laptop, phone = new_browser(), new_browser()
    fill(laptop, "/signup", "/signup", {"email": "two@example.org", "password": PASSWORD})
    refused = fill(phone, "/signin", "/signin", {"email": "two@example.org", "password": PASSWORD})
    assert refused.status_code == 403  # "confirm first": a new link is mailed
    link = mailbox.link("two@example.org", "confirm your email", "/verify")
    _follow(phone, link, "/verify")
    assert _signs_in(new_browser(), "two@example.org", PASSWORD)


def test_a_proof_from_another_sign_up_does_not_keep_the_password(
    new_browser: Callable[[], TestClient], mailbox: Mailbox, app: App
) -> None:
    """The browser proof is bound to one account and one password: the proof an attacker got for their own
    account, with the same password, copied into the owner's browser, keeps nothing on the owner's address."""
    own, other, owner = new_browser(), new_browser(), new_browser()
    fill(own, "/signup", "/signup", {"email": "mallory@example.org", "password": ATTACKERS})
    _attacker_signs_up(other)
    planted = [c for c in own.cookies.jar if "signup" in c.name]
    assert planted, [c.name for c in own.cookies.jar]
    for cookie in planted:
        owner.cookies.set(cookie.name, cookie.value or "", domain=cookie.domain, path=cookie.path)
    _follow(owner, mailbox.link(VICTIM, "confirm your email", "/verify", index=0), "/verify")
    stored = app.readers.accounts.store.user_by_email(VICTIM)
    assert stored is not None
    assert stored.user.email_verified
    assert stored.password_hash is None
    assert not _signs_in(new_browser(), VICTIM, ATTACKERS)


def test_a_second_sign_up_for_an_unconfirmed_address_changes_nothing(
    new_browser: Callable[[], TestClient], mailbox: Mailbox
) -> None:
    owner, attacker = new_browser(), new_browser()
    fill(owner, "/signup", "/signup", {"email": "first@example.org", "password": PASSWORD})
    again = fill(attacker, "/signup", "/signup", {"email": "first@example.org", "password": ATTACKERS})
    assert again.status_code == 200
    assert "Check your inbox" in again.text  # the same reply: no account enumeration
    mailbox.wait("first@example.org", "already have")
    link = mailbox.link("first@example.org", "confirm your email", "/verify", index=0)
    _follow(owner, link, "/verify")
    assert _signs_in(new_browser(), "first@example.org", PASSWORD)
    assert not _signs_in(new_browser(), "first@example.org", ATTACKERS)


def test_the_owner_who_signs_up_after_the_attacker_takes_the_account_back_with_a_reset(
    new_browser: Callable[[], TestClient], mailbox: Mailbox
) -> None:
    attacker, owner = new_browser(), new_browser()
    _attacker_signs_up(attacker)
    fill(owner, "/signup", "/signup", {"email": VICTIM, "password": OWNERS})
    text = mailbox.wait(VICTIM, "already have")[0]
    assert "/forgot" in text
    fill(owner, "/forgot", "/forgot", {"email": VICTIM})
    link = mailbox.link(VICTIM, "reset", "/reset")
    done = fill(owner, link, "/reset", {"token": link.split("token=", 1)[1], "password": OWNERS})
    assert done.status_code == 303
    assert not _signs_in(new_browser(), VICTIM, ATTACKERS)
    sign_in(new_browser(), VICTIM, OWNERS)


# -- the issue's reproduction over real HTTP (uvicorn on loopback, httpx, real mail) ------------------------


def _post_form(client: httpx.Client, page: str, action: str, data: dict[str, str]) -> httpx.Response:
    got = client.get(page, headers={"accept": "text/html"})
    assert got.status_code in (200, 400), (page, got.status_code)
    return client.post(
        action, data={**data, "csrf_token": csrf_from(got.text)}, headers={"accept": "text/html"}
    )


def test_the_issue_reproduction_over_real_http(settings: Settings, mailbox: Mailbox, app: App) -> None:
    with (
        live_server(settings) as url,
        httpx.Client(base_url=url, follow_redirects=False, timeout=30) as attacker,
        httpx.Client(base_url=url, follow_redirects=False, timeout=30) as victim,
    ):
        # POST /signup victim + password P
        assert (
            _post_form(attacker, "/signup", "/signup", {"email": VICTIM, "password": ATTACKERS}).status_code
            == 200
        )
        # the victim asks for a sign-in link and follows the mailed link
        assert _post_form(victim, "/signin", "/signin/email", {"email": VICTIM}).status_code == 200
        mail = mailbox.wait(VICTIM, "sign-in link")[-1]
        (found,) = re.findall(r"https?://\S+/signin/link\?\S+", mail)
        parts = urlsplit(found)
        link = f"{parts.path}?{parts.query}"
        used = _post_form(victim, link, "/signin/link", {"token": parts.query.split("token=", 1)[1]})
        assert used.status_code == 303
        assert victim.get("/api/me").json()["email"] == VICTIM
        # POST /signin victim + P: must not sign the attacker in
        tried = _post_form(attacker, "/signin", "/signin", {"email": VICTIM, "password": ATTACKERS})
        assert tried.status_code == 400
        assert "do not match an account" in tried.text
        assert attacker.get("/api/me").status_code == 401
        # and the owner can set a password without knowing one
        done = _post_form(victim, "/account", "/account/password", {"password": OWNERS})
        assert done.status_code == 303
        with httpx.Client(base_url=url, follow_redirects=False, timeout=30) as later:
            ok = _post_form(later, "/signin", "/signin", {"email": VICTIM, "password": OWNERS})
            assert ok.status_code == 303


def test_the_proof_follows_a_password_rehashed_at_sign_in(app: App, mailbox: Mailbox) -> None:
    """A sign-in that re-hashes the password (new argon2 parameters) hands out the proof of the new hash."""
    from dataclasses import replace

    from argon2 import PasswordHasher

    from paperfeed.domain.accounts import EmailNotVerified

    old = replace(app.readers.accounts)
    object.__setattr__(old, "_hasher", PasswordHasher(time_cost=1, memory_cost=8 * 1024, parallelism=1))
    old.sign_up("re@example.org", PASSWORD, None, client="c", base_url="http://x")
    try:
        app.readers.accounts.sign_in("re@example.org", PASSWORD, client="c", base_url="http://x")
    except EmailNotVerified as exc:
        proof = exc.proof
    else:
        raise AssertionError("an unconfirmed address signed in")
    stored = app.readers.accounts.store.user_by_email("re@example.org")
    assert stored is not None
    assert stored.password_hash is not None
    assert "m=65536" in stored.password_hash  # re-hashed with the current parameters
    link = mailbox.link("re@example.org", "confirm your email", "/verify")
    confirmed = app.readers.accounts.verify_email(link.split("token=", 1)[1], proof=proof)
    assert confirmed.password_kept
    app.readers.accounts.sign_in("re@example.org", PASSWORD, client="c", base_url="http://x")
