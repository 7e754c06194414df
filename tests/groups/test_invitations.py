"""Invitations that end, mail that relays nothing, names that are not addresses (issue #41, findings 2-5),
each attack of the probe replayed first, on SQLite and PostgreSQL: the real app over HTTP, the mail
received by the recording SMTP server (aiosmtpd).

2. One account mailed 20 invitations whose Subject was the group's name ("Join “WIN $500 - claim at
   evil.example/claim” on paperfeed"): now a day's invitations are capped per account and per group, and
   the Subject holds nothing a reader wrote.
3. The owner invites X twice, X accepts the first, the owner removes X, X opens the second link and is a
   member again: now accepting closes the others, removing (or leaving) closes the address's open ones,
   and the owner can withdraw one (page and API).
4. A member without a display name was shown by the start of their address: now "reader N".
5. After a hand-over the new owner saw the addresses the previous owner typed: now only who sent them.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete

from paperfeed.adapters.store.schema_accounts import rate_limit_hits
from paperfeed.bootstrap import App
from paperfeed.domain.groups import GroupNotFound
from paperfeed.services.groups import GroupService
from paperfeed.settings import Settings
from tests.accounts.conftest import PAPER_IDS, Mailbox, fill, make_settings, quick_sign_in
from tests.support.authz import csrf_from
from tests.support.smtp_server import SmtpTestServer

OWNER, X, OTHER = "owner@example.org", "x.private.handle@example.org", "other@example.org"
SPAM = "WIN $500 - claim at evil.example/claim"


@pytest.fixture
def settings(tmp_path: Path, smtp_server: SmtpTestServer, db_url: str) -> Settings:
    return make_settings(
        tmp_path / "data",
        smtp_server,
        database_url=db_url,
        group_invites_per_account_per_day=3,
        group_invites_per_group_per_day=2,
    )


def _id(app: App, email: str) -> int:
    return app.readers.accounts.user_by_email(email).id


def _token(text: str) -> str:
    found = re.search(r"/groups/invitations/([A-Za-z0-9_-]+)", text)
    assert found, text
    return found.group(1)


def _csrf(client: TestClient) -> str:
    return csrf_from(client.get("/groups", headers={"accept": "text/html"}).text)


def test_an_account_and_a_group_mail_at_most_a_days_invitations(
    app: App, site: TestClient, new_browser: Callable[[], TestClient], smtp_server: SmtpTestServer
) -> None:
    quick_sign_in(site, app, OWNER)
    first = app.readers.groups.create(_id(app, OWNER), SPAM)
    second = app.readers.groups.create(_id(app, OWNER), "Second group")
    page = f"/groups/{first.id}"
    for n in range(2):
        assert fill(site, page, f"{page}/invite", {"email": f"target{n}@example.org"}).status_code == 303
    refused = fill(site, page, f"{page}/invite", {"email": "target2@example.org"})
    assert refused.status_code == 429  # the group's cap: shown on the invite form, the address kept
    assert int(refused.headers["retry-after"]) > 3600
    assert "this group has sent 2 invitations in the last 24 hours" in refused.text
    assert 'value="target2@example.org"' in refused.text
    api = site.post(
        f"/api/groups/{second.id}/invitations",
        json={"email": "target3@example.org"},
        headers={"X-CSRF-Token": _csrf(site)},
    )
    assert api.status_code == 202  # the account's third
    over = site.post(
        f"/api/groups/{second.id}/invitations",
        json={"email": "target4@example.org"},
        headers={"X-CSRF-Token": _csrf(site)},
    )
    assert over.status_code == 429  # the account's cap, whichever group
    assert "you have sent 3 invitations" in over.json()["error"]
    assert int(over.headers["retry-after"]) > 3600
    assert [i.email for i in app.readers.groups.invitations(_id(app, OWNER), first.id)] == [
        "target1@example.org",
        "target0@example.org",
    ]  # nothing recorded past a cap
    for n in range(5):
        got = smtp_server.to(f"target{n}@example.org")
        assert len(got) == (1 if n in (0, 1, 3) else 0), n
    other = new_browser()  # another account's group is not held back by these
    quick_sign_in(other, app, OTHER)
    own = app.readers.groups.create(_id(app, OTHER), "Theirs")
    assert (
        fill(other, f"/groups/{own.id}", f"/groups/{own.id}/invite", {"email": "t@example.org"}).status_code
        == 303
    )


def test_the_subject_carries_nothing_a_reader_wrote(
    app: App, site: TestClient, mailbox: Mailbox, smtp_server: SmtpTestServer
) -> None:
    quick_sign_in(site, app, OWNER)
    app.readers.accounts.set_display_name(app.readers.accounts.user_by_email(OWNER), "Prize Desk")
    group = app.readers.groups.create(_id(app, OWNER), SPAM)
    assert fill(site, f"/groups/{group.id}", f"/groups/{group.id}/invite", {"email": X}).status_code == 303
    text = mailbox.wait(X, "invitation")[0]
    (mail,) = smtp_server.to(X)
    assert mail.subject == "An invitation to a reading group on paperfeed"
    assert "WIN" not in mail.subject
    assert "Prize" not in mail.subject
    assert f"    {SPAM}\n" in text  # the body quotes the name, set apart, as its owner wrote it
    assert "did not write the group's name or the inviter's" in text


def test_a_removed_member_cannot_come_back_through_an_older_invitation(
    app: App, site: TestClient, new_browser: Callable[[], TestClient], mailbox: Mailbox
) -> None:
    owner, x = site, new_browser()
    quick_sign_in(owner, app, OWNER)
    quick_sign_in(x, app, X)
    group = app.readers.groups.create(_id(app, OWNER), "Club")
    page = f"/groups/{group.id}"
    for _ in range(2):
        assert fill(owner, page, f"{page}/invite", {"email": X}).status_code == 303
    older, newer = (_token(t) for t in mailbox.wait(X, "invitation", count=2))
    joined = fill(x, f"/groups/invitations/{newer}", "/groups/invitations/accept", {"token": newer})
    assert joined.status_code == 303
    assert x.get(f"/groups/invitations/{older}", headers={"accept": "text/html"}).status_code == 404  # closed
    removed = fill(owner, page, f"{page}/members/remove", {"member": str(_id(app, X))})
    assert removed.status_code == 303
    back = fill(x, "/groups", "/groups/invitations/accept", {"token": older})
    assert back.status_code == 404
    assert app.readers.groups.records.membership(group.id, _id(app, X)) is None
    assert x.get(page, headers={"accept": "text/html"}).status_code == 404


def test_leaving_closes_the_addresss_open_invitations(app: App) -> None:
    g = app.readers.groups
    for email in (OWNER, X):
        app.readers.accounts.sign_up(email, None, None, client="t", base_url="http://t")
    owner, x = _id(app, OWNER), _id(app, X)
    group = g.create(owner, "Club")
    first = _token(g.invite(owner, group.id, X, base_url="http://t", client="a").text)
    g.accept(x, X, first)
    again = _token(g.invite(owner, group.id, X, base_url="http://t", client="a").text)  # sent to a member
    g.leave(x, group.id)
    with pytest.raises(GroupNotFound):
        g.accept(x, X, again)
    assert g.records.membership(group.id, x) is None


def _remove_while_accepting(g: GroupService, owner: int, x: int, group_id: int, token: str) -> None:
    """The owner removes ``x`` while ``x`` accepts an invitation, both released at the same instant."""
    barrier = threading.Barrier(2)
    failed: list[BaseException] = []

    def remove() -> None:
        barrier.wait()
        try:
            g.remove(owner, group_id, x)
        except BaseException as exc:
            failed.append(exc)

    def accept() -> None:
        barrier.wait()
        try:
            g.accept(x, X, token)
        except GroupNotFound:
            pass  # the link was closed first
        except BaseException as exc:
            failed.append(exc)

    threads = [threading.Thread(target=remove), threading.Thread(target=accept)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not failed, failed


def test_a_removal_racing_an_acceptance_never_leaves_the_member_in(app: App) -> None:
    """Whichever commits first, a removed reader is not a member afterwards (the acceptance and the
    removal are each one transaction; the removal closes the address's invitations before it deletes)."""
    g = app.readers.groups
    for email in (OWNER, X):
        app.readers.accounts.sign_up(email, None, None, client="t", base_url="http://t")
    owner, x = _id(app, OWNER), _id(app, X)
    for round_ in range(12):
        with app.core.store.engine.begin() as conn:  # 24 invitations in all: past the mail limits
            conn.execute(delete(rate_limit_hits))
        group = g.create(owner, f"Race {round_}")
        first = _token(g.invite(owner, group.id, X, base_url="http://t", client=f"r{round_}").text)
        g.accept(x, X, first)
        older = _token(g.invite(owner, group.id, X, base_url="http://t", client=f"s{round_}").text)
        _remove_while_accepting(g, owner, x, group.id, older)
        # the acceptance may have come first (then the removal removed them) or found the link closed
        assert g.records.membership(group.id, x) is None, round_


def test_the_owner_withdraws_an_invitation_on_the_page_and_through_the_api(
    app: App, site: TestClient, new_browser: Callable[[], TestClient], mailbox: Mailbox
) -> None:
    owner, x = site, new_browser()
    quick_sign_in(owner, app, OWNER)
    quick_sign_in(x, app, X)
    group = app.readers.groups.create(_id(app, OWNER), "Club")
    page = f"/groups/{group.id}"
    assert fill(owner, page, f"{page}/invite", {"email": X}).status_code == 303
    shown = owner.get(page, headers={"accept": "text/html"}).text
    found = re.search(rf'action="{page}/invitations/(\d+)/withdraw"', shown)
    assert found, shown
    assert fill(owner, page, f"{page}/invitations/{found.group(1)}/withdraw", {}).status_code == 303
    token = _token(mailbox.wait(X, "invitation")[0])
    assert x.get(f"/groups/invitations/{token}", headers={"accept": "text/html"}).status_code == 404
    assert fill(x, "/groups", "/groups/invitations/accept", {"token": token}).status_code == 404
    # the API: list, withdraw, and the link is dead
    assert fill(owner, page, f"{page}/invite", {"email": X}).status_code == 303
    listed = owner.get(f"/api/groups/{group.id}/invitations")
    assert listed.status_code == 200
    (open_one,) = listed.json()
    assert open_one["email"] == X
    gone = owner.delete(
        f"/api/groups/{group.id}/invitations/{open_one['id']}", headers={"X-CSRF-Token": _csrf(owner)}
    )
    assert gone.status_code == 200
    assert owner.get(f"/api/groups/{group.id}/invitations").json() == []
    again = owner.delete(
        f"/api/groups/{group.id}/invitations/{open_one['id']}", headers={"X-CSRF-Token": _csrf(owner)}
    )
    assert again.status_code == 404
    token = _token(mailbox.wait(X, "invitation", count=2)[1])
    assert fill(x, "/groups", "/groups/invitations/accept", {"token": token}).status_code == 404


def test_a_member_without_a_display_name_is_never_shown_by_their_address(
    app: App, site: TestClient, new_browser: Callable[[], TestClient]
) -> None:
    owner, x = site, new_browser()
    quick_sign_in(owner, app, OWNER)
    quick_sign_in(x, app, X)  # no display name
    g = app.readers.groups
    group = g.create(_id(app, OWNER), "Club")
    g.accept(
        _id(app, X), X, _token(g.invite(_id(app, OWNER), group.id, X, base_url="http://t", client="a").text)
    )
    g.queue_add(_id(app, X), group.id, PAPER_IDS[0], "mine")
    from datetime import UTC, datetime, timedelta

    g.schedule(_id(app, OWNER), group.id, datetime.now(UTC) + timedelta(days=1), _id(app, X), PAPER_IDS[0])
    g.queue_add(_id(app, X), group.id, PAPER_IDS[1], "also mine")
    local = X.split("@")[0]
    html = owner.get(f"/groups/{group.id}", headers={"accept": "text/html"}).text
    assert local not in html
    assert f"reader {_id(app, X)}" in html  # the queue's "added by", the members, the presenter
    members = owner.get(f"/api/groups/{group.id}").json()["members"]
    assert {m["name"] for m in members} == {f"reader {_id(app, OWNER)}", f"reader {_id(app, X)}"}
    assert local not in owner.get(f"/api/groups/{group.id}").text


def test_after_a_hand_over_the_new_owner_sees_who_invited_not_the_address(
    app: App, site: TestClient, new_browser: Callable[[], TestClient]
) -> None:
    owner, member = site, new_browser()
    quick_sign_in(owner, app, OWNER)
    quick_sign_in(member, app, OTHER)
    app.readers.accounts.set_display_name(app.readers.accounts.user_by_email(OWNER), "Ada")
    g = app.readers.groups
    group = g.create(_id(app, OWNER), "Club")
    g.accept(
        _id(app, OTHER),
        OTHER,
        _token(g.invite(_id(app, OWNER), group.id, OTHER, base_url="http://t", client="a").text),
    )
    g.invite(_id(app, OWNER), group.id, "typed.by.ada@example.org", base_url="http://t", client="a")
    assert (
        "typed.by.ada@example.org" in owner.get(f"/groups/{group.id}", headers={"accept": "text/html"}).text
    )
    g.hand_over(_id(app, OWNER), group.id, _id(app, OTHER))
    page = member.get(f"/groups/{group.id}", headers={"accept": "text/html"}).text
    assert "typed.by.ada@example.org" not in page
    assert "an address <bdi>Ada</bdi> invited" in page  # and a button to withdraw it
    listed = member.get(f"/api/groups/{group.id}/invitations").json()
    assert [(i["email"], i["invitedBy"]) for i in listed] == [(None, "Ada")]
    gone = member.delete(
        f"/api/groups/{group.id}/invitations/{listed[0]['id']}", headers={"X-CSRF-Token": _csrf(member)}
    )
    assert gone.status_code == 200
