"""Data export and account deletion through the real app (real SQLite store, real SMTP server).

The attacks these flows must resist: a request from another site (CSRF), a session left open or stolen
(deletion asks for the password again, or for a link mailed to the address), one reader reaching
another's data (no route takes an account id: each acts on the caller), anonymous callers.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from paperfeed.adapters.store.schema_accounts import users
from paperfeed.bootstrap import App
from paperfeed.domain.digest import Preferences, SubscriptionStatus
from paperfeed.web.security import SESSION_COOKIE

from .conftest import (
    PAPER_IDS,
    PASSWORD,
    Mailbox,
    add_topic,
    csrf_from,
    fill,
    quick_sign_in,
    sign_in,
    sign_up,
)

P1, P2, P3, P4 = PAPER_IDS
FILES = {
    "account.json",
    "library.json",
    "library.bib",
    "comments.json",
    "upvotes.json",
    "submissions.json",
    "subscriptions.json",
    "topics.json",
    "groups.json",
}


def _use_everything(app: App, email: str, paper: str) -> int:
    """Save, note, tag, vote, comment and subscribe as ``email``; returns the user id."""
    user = app.readers.accounts.user_by_email(email)
    app.readers.library.save(user.id, paper, ["Reading list", "Fish"])
    app.readers.library.set_note(user.id, paper, f"note of {email}: *important*")
    app.readers.library.set_dismissed(user.id, P3, True)
    app.readers.library.follow(user.id, "Ada Fishwick")
    app.readers.community.upvote(user, paper)
    app.readers.community.add_comment(user, paper, f"comment of {email}")
    app.digests.records.create_subscription(
        email,
        Preferences(),
        status=SubscriptionStatus.active,
        user_id=user.id,
        now=app.readers.accounts.clock(),
    )
    if app.catalogue.topic_picks.records.topic(3) is None:
        add_topic(app.core.store, 3, "Zebrafish gaits")
    app.catalogue.topic_picks.pick(user.id, 3)  # a topic picked for "For you"
    return user.id


def _unzip(body: bytes) -> dict[str, Any]:
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        assert set(archive.namelist()) == FILES
        return {
            name: archive.read(name).decode() if name.endswith(".bib") else json.loads(archive.read(name))
            for name in archive.namelist()
        }


def _user_exists(app: App, email: str) -> bool:
    with app.core.store.engine.connect() as conn:
        return bool(conn.execute(select(func.count()).where(users.c.email == email)).scalar_one())


def _account_page_csrf(client: TestClient) -> str:
    page = client.get("/account", headers={"accept": "text/html"})
    assert page.status_code == 200, page.status_code
    assert 'action="/account/export"' in page.text
    assert 'href="/account/delete"' in page.text
    return csrf_from(page.text)


# -- export ---------------------------------------------------------------------------------------------


def test_export_from_the_account_page_is_a_zip_of_the_readers_data(
    site: TestClient, app: App, new_browser: Callable[[], TestClient]
) -> None:
    quick_sign_in(site, app, "ann@example.org")
    _use_everything(app, "ann@example.org", P1)
    bob = new_browser()
    quick_sign_in(bob, app, "bob@example.org")
    _use_everything(app, "bob@example.org", P2)

    got = site.post("/account/export", data={"csrf_token": _account_page_csrf(site)})

    assert got.status_code == 200, got.text[:300]
    assert got.headers["content-type"] == "application/zip"
    assert got.headers["cache-control"] == "private, no-store"
    assert re.fullmatch(
        r'attachment; filename="paperfeed-export-ann-\d{4}-\d{2}-\d{2}\.zip"',
        got.headers["content-disposition"],
    )
    files = _unzip(got.content)
    assert files["account.json"]["email"] == "ann@example.org"
    assert files["account.json"]["hasPassword"] is False
    [paper] = [p for p in files["library.json"]["papers"] if p["saved"]]
    assert paper["paperId"] == P1
    assert {t["tag"] for t in paper["tags"]} == {"Reading list", "Fish"}
    assert paper["note"]["markdown"] == "note of ann@example.org: *important*"
    assert files["library.json"]["notInterested"] == [P3]
    assert files["library.json"]["followedAuthors"][0]["name"] == "Ada Fishwick"
    assert [c["markdown"] for c in files["comments.json"]] == ["comment of ann@example.org"]
    assert [u["paperId"] for u in files["upvotes.json"]] == [P1]
    assert [s["email"] for s in files["subscriptions.json"]] == ["ann@example.org"]
    [pick] = files["topics.json"]
    assert (pick["topicId"], pick["label"]) == (3, "Zebrafish gaits")
    assert pick["pickedAt"].startswith(str(app.readers.accounts.clock().year))
    # library.bib is the site's own BibTeX of the saved paper (web/citation.py).
    assert files["library.bib"].startswith("@misc{fishwick2025zebrafish,")
    assert "Zebrafish locomotion with sparse transformers" in files["library.bib"]
    assert "bob@example.org" not in json.dumps([v for k, v in files.items() if k.endswith(".json")])


def test_export_needs_a_signed_in_reader_and_the_csrf_token(site: TestClient, app: App) -> None:
    token = csrf_from(site.get("/signin", headers={"accept": "text/html"}).text)
    anonymous = site.post("/account/export", data={"csrf_token": token}, headers={"accept": "text/html"})
    assert anonymous.status_code == 303
    assert anonymous.headers["location"].startswith("/signin?next=")
    assert site.get("/api/me/export").status_code == 401
    quick_sign_in(site, app, "ann@example.org")
    refused = site.post("/account/export", data={}, headers={"accept": "text/html"})
    assert refused.status_code == 403
    assert "zip" not in refused.headers["content-type"]
    cross = site.post(
        "/account/export",
        data={"csrf_token": _account_page_csrf(site)},
        headers={"origin": "https://evil.example", "accept": "text/html"},
    )
    assert cross.status_code == 403


def test_api_export_answers_each_token_with_its_own_readers_data(
    site: TestClient, app: App, new_browser: Callable[[], TestClient]
) -> None:
    quick_sign_in(site, app, "ann@example.org")
    _use_everything(app, "ann@example.org", P1)
    quick_sign_in(new_browser(), app, "bob@example.org")
    _use_everything(app, "bob@example.org", P2)
    bob_token = app.readers.accounts.create_api_token(
        app.readers.accounts.user_by_email("bob@example.org"), "cli"
    )[1]

    by_session = site.get("/api/me/export")
    anonymous = new_browser().get("/api/me/export", headers={"accept": "application/json"})
    by_token = new_browser().get("/api/me/export", headers={"authorization": f"Bearer {bob_token}"})
    bad_token = new_browser().get("/api/me/export", headers={"authorization": "Bearer pf_nonsense"})

    assert by_session.status_code == 200
    assert _unzip(by_session.content)["account.json"]["email"] == "ann@example.org"
    assert by_token.status_code == 200
    assert by_token.headers["cache-control"] == "private, no-store"
    bob_files = _unzip(by_token.content)
    assert bob_files["account.json"]["email"] == "bob@example.org"
    assert bob_files["account.json"]["apiTokens"][0]["name"] == "cli"
    assert bob_token not in by_token.content.decode("latin-1")  # the secret is in no file
    assert [u["paperId"] for u in bob_files["upvotes.json"]] == [P2]
    assert anonymous.status_code == 401
    assert anonymous.json()["error"]
    assert bad_token.status_code == 401


# -- deletion with a password ---------------------------------------------------------------------------


def test_delete_with_the_password_removes_everything_and_ends_the_session(
    site: TestClient, app: App, mailbox: Mailbox, new_browser: Callable[[], TestClient]
) -> None:
    sign_up(site, mailbox, "ann@example.org")
    sign_in(site, "ann@example.org")
    _use_everything(app, "ann@example.org", P1)
    token = app.readers.accounts.create_api_token(
        app.readers.accounts.user_by_email("ann@example.org"), "cli"
    )[1]
    other_device = new_browser()
    sign_in(other_device, "ann@example.org")
    bob = new_browser()
    quick_sign_in(bob, app, "bob@example.org")
    _use_everything(app, "bob@example.org", P1)
    assert app.readers.community.votes(P1).local == 2

    page = site.get("/account/delete", headers={"accept": "text/html"})
    assert page.status_code == 200
    assert 'name="password"' in page.text
    csrf = csrf_from(page.text)
    no_csrf = site.post("/account/delete", data={"password": PASSWORD}, headers={"accept": "text/html"})
    wrong = site.post("/account/delete", data={"password": "not it at all", "csrf_token": csrf})
    empty = site.post("/account/delete", data={"csrf_token": csrf})
    assert (no_csrf.status_code, wrong.status_code, empty.status_code) == (403, 400, 400)
    assert "nothing was deleted" in wrong.text
    assert _user_exists(app, "ann@example.org")

    done = site.post("/account/delete", data={"password": PASSWORD, "csrf_token": csrf})

    assert done.status_code == 303
    assert done.headers["location"] == "/account/deleted"
    assert f'{SESSION_COOKIE}=""' in done.headers["set-cookie"] or "Max-Age=0" in done.headers["set-cookie"]
    notice = site.get("/account/deleted", headers={"accept": "text/html"})
    assert "Your account and everything kept with it are deleted" in notice.text
    assert not _user_exists(app, "ann@example.org")
    # Every credential is dead: the other device's session, the API token, the password.
    assert (
        other_device.get("/account", headers={"accept": "text/html"})
        .headers["location"]
        .startswith("/signin")
    )
    assert site.get("/api/me", headers={"authorization": f"Bearer {token}"}).status_code == 401
    again = fill(site, "/signin", "/signin", {"email": "ann@example.org", "password": PASSWORD})
    assert again.status_code == 400
    # Bob's things stay, and counts drop by exactly Ann's vote and comment.
    assert app.readers.community.votes(P1).local == 1
    assert [c.body for c in app.readers.community.comments(P1)[1]] == ["comment of bob@example.org"]
    assert app.digests.records.subscription_by_email("ann@example.org") is None
    assert app.digests.records.subscription_by_email("bob@example.org") is not None
    # The address can sign up afresh, to an empty account.
    fill(site, "/signup", "/signup", {"email": "ann@example.org", "password": PASSWORD, "display_name": ""})
    mailbox.wait("ann@example.org", "confirm your email", count=2)  # the first link was used up
    link = mailbox.link("ann@example.org", "confirm your email", "/verify")
    assert fill(site, link, "/verify", {"token": link.split("token=", 1)[1]}).status_code == 303
    sign_in(site, "ann@example.org")
    fresh = site.get("/api/me/export")
    assert _unzip(fresh.content)["library.json"]["papers"] == []


def test_wrong_deletion_passwords_are_rate_limited(site: TestClient, app: App, mailbox: Mailbox) -> None:
    sign_up(site, mailbox, "ann@example.org")
    sign_in(site, "ann@example.org")
    csrf = csrf_from(site.get("/account/delete", headers={"accept": "text/html"}).text)
    codes = [
        site.post("/account/delete", data={"password": f"guess {i}", "csrf_token": csrf}).status_code
        for i in range(11)
    ]
    assert codes == [400] * 10 + [429]
    right = site.post("/account/delete", data={"password": PASSWORD, "csrf_token": csrf})
    assert right.status_code == 429
    assert int(right.headers["retry-after"]) > 0
    assert _user_exists(app, "ann@example.org")


# -- deletion without a password: a mailed link -----------------------------------------------------------


def test_passwordless_deletion_needs_the_mailed_link_of_the_same_account(
    site: TestClient, app: App, mailbox: Mailbox, new_browser: Callable[[], TestClient]
) -> None:
    quick_sign_in(site, app, "ann@example.org")
    _use_everything(app, "ann@example.org", P1)
    mallory = new_browser()
    quick_sign_in(mallory, app, "mallory@example.org")

    page = site.get("/account/delete", headers={"accept": "text/html"})
    assert 'name="password"' not in page.text
    assert 'action="/account/delete/mail"' in page.text
    csrf = csrf_from(page.text)
    without_link = site.post("/account/delete", data={"csrf_token": csrf})
    forged = site.post("/account/delete", data={"token": "made-up", "csrf_token": csrf})
    assert (without_link.status_code, forged.status_code) == (400, 400)

    asked = site.post("/account/delete/mail", data={"csrf_token": csrf})
    assert asked.status_code == 200
    assert "on its way" in asked.text
    link = mailbox.link("ann@example.org", "deleting your", "/account/delete")
    token = link.split("token=", 1)[1]

    # Someone else signed in cannot use Ann's link: it is refused and stays usable for Ann.
    theirs = mallory.get(link, headers={"accept": "text/html"})
    assert "invalid or has expired" in theirs.text
    assert 'name="token"' not in theirs.text
    refused = mallory.post("/account/delete", data={"token": token, "csrf_token": csrf_from(theirs.text)})
    assert refused.status_code == 400
    assert _user_exists(app, "mallory@example.org")
    assert _user_exists(app, "ann@example.org")
    # Opening the link does nothing by itself (mail scanners fetch links); the button does.
    mine = site.get(link, headers={"accept": "text/html"})
    assert mine.status_code == 200
    assert 'name="token"' in mine.text
    assert _user_exists(app, "ann@example.org")
    done = site.post("/account/delete", data={"token": token, "csrf_token": csrf_from(mine.text)})
    assert done.status_code == 303
    assert done.headers["location"] == "/account/deleted"
    assert not _user_exists(app, "ann@example.org")
    assert _user_exists(app, "mallory@example.org")
