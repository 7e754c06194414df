"""The group flow over HTTP (Starlette's TestClient on the real app): create, invite through a mailed
link, accept, queue from a paper page's form and the API, vote, schedule a session, keep notes, the
archive; what members, owners, former members and strangers get; bad input is a 4xx."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App
from paperfeed.domain.groups import GroupNotFound
from tests.accounts.conftest import PAPER_IDS, Mailbox, fill, quick_sign_in

OWNER, MEMBER, STRANGER = "owner@example.org", "member@example.org", "stranger@example.org"


def _group_id(reply: object) -> int:
    location = reply.headers["location"]  # type: ignore[attr-defined]
    found = re.match(r"/groups/(\d+)", location)
    assert found, location
    return int(found.group(1))


def _invite_and_join(owner: TestClient, member: TestClient, mailbox: Mailbox, gid: int) -> None:
    sent = fill(owner, f"/groups/{gid}", f"/groups/{gid}/invite", {"email": MEMBER})
    assert sent.status_code == 303, sent.text
    link = mailbox.link(MEMBER, "invitation", f"/groups/invitations/{_token(mailbox)}")
    shown = member.get(link, headers={"accept": "text/html"})
    assert shown.status_code == 200
    assert "Join the group" in shown.text
    joined = fill(member, link, "/groups/invitations/accept", {"token": _token(mailbox)})
    assert joined.status_code == 303, joined.text
    assert joined.headers["location"].startswith(f"/groups/{gid}")


def _token(mailbox: Mailbox) -> str:
    text = mailbox.wait(MEMBER, "invitation")[-1]
    found = re.search(r"/groups/invitations/([A-Za-z0-9_-]+)", text)
    assert found, text
    return found.group(1)


def test_the_whole_flow_of_two_readers(
    app: App, site: TestClient, new_browser: Callable[[], TestClient], mailbox: Mailbox
) -> None:
    owner, member = site, new_browser()
    quick_sign_in(owner, app, OWNER)
    quick_sign_in(member, app, MEMBER)
    made = fill(owner, "/groups", "/groups", {"name": "Zebrafish club", "description": "Fridays"})
    assert made.status_code == 303
    gid = _group_id(made)
    _invite_and_join(owner, member, mailbox, gid)

    # the member queues from a paper page's form, the owner through the API
    page = member.get(f"/papers/{PAPER_IDS[0]}", headers={"accept": "text/html"})
    assert "Queue for" in page.text
    assert "Zebrafish club" in page.text
    queued = fill(
        member,
        f"/papers/{PAPER_IDS[0]}",
        f"/groups/{gid}/queue",
        {"paper_id": PAPER_IDS[0], "note": "the **gaits**", "next": f"/papers/{PAPER_IDS[0]}"},
    )
    assert queued.status_code == 303
    assert queued.headers["location"].startswith(f"/papers/{PAPER_IDS[0]}")
    bearer = app.readers.accounts.create_api_token(app.readers.accounts.user_by_email(OWNER), "t")[1]
    api = new_browser().post(
        f"/api/groups/{gid}/queue",
        json={"paper_id": PAPER_IDS[1], "note": "also"},
        headers={"authorization": f"Bearer {bearer}"},
    )
    assert api.status_code == 201, api.text
    assert api.headers["cache-control"] == "private, no-store"

    # both vote; the member's paper wins
    assert (
        fill(member, f"/groups/{gid}", f"/groups/{gid}/vote", {"paper_id": PAPER_IDS[0]}).status_code == 303
    )
    assert fill(owner, f"/groups/{gid}", f"/groups/{gid}/vote", {"paper_id": PAPER_IDS[0]}).status_code == 303
    shown = member.get(f"/groups/{gid}", headers={"accept": "text/html"})
    assert shown.status_code == 200
    assert shown.headers["cache-control"] == "private, no-store"
    assert "2 votes" in shown.text
    assert "<strong>gaits</strong>" in shown.text
    assert "member" in shown.text
    assert OWNER not in shown.text

    # the owner schedules the most voted paper; a member presents
    member_id = app.readers.accounts.user_by_email(MEMBER).id
    when = (datetime.now(UTC) + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M")
    scheduled = fill(
        owner,
        f"/groups/{gid}",
        f"/groups/{gid}/sessions",
        {"starts_at": when, "timezone": "Europe/Berlin", "presenter": str(member_id), "paper_id": "vote"},
    )
    assert scheduled.status_code == 303, scheduled.text
    session_path = scheduled.headers["location"].split("?")[0]
    notes = fill(
        member, session_path, f"{session_path}/notes", {"body": "## Three gaits\n<script>x</script>"}
    )
    assert notes.status_code == 303
    session = owner.get(session_path, headers={"accept": "text/html"})
    assert "<h2>Three gaits</h2>" in session.text
    assert "<script>x" not in session.text
    assert PAPER_IDS[0] not in [q.entry.paper_id for q in app.readers.groups.page(member_id, gid).queue]

    # the member's private calendar feed
    calendar = re.search(r'href="(/groups/calendar/[^"]+\.ics)"', shown.text)
    assert calendar
    ics = member.get(calendar.group(1))
    assert ics.status_code == 200
    assert ics.headers["content-type"].startswith("text/calendar")
    assert "private" in ics.headers["cache-control"]

    # a stranger learns nothing: the group, its sessions, its archive are 404s like an unknown id
    stranger = new_browser()
    quick_sign_in(stranger, app, STRANGER)
    for path in (f"/groups/{gid}", session_path, f"/groups/{gid}/archive", "/groups/999999"):
        got = stranger.get(path, headers={"accept": "text/html"})
        assert got.status_code == 404, (path, got.status_code)
    assert stranger.get(f"/api/groups/{gid}").status_code == 404
    assert stranger.get("/api/groups/999999").status_code == 404


def test_an_invitation_works_once_for_its_address_and_expires(
    app: App, site: TestClient, new_browser: Callable[[], TestClient], mailbox: Mailbox
) -> None:
    owner, member, other = site, new_browser(), new_browser()
    quick_sign_in(owner, app, OWNER)
    quick_sign_in(member, app, MEMBER)
    quick_sign_in(other, app, STRANGER)
    gid = _group_id(fill(owner, "/groups", "/groups", {"name": "G"}))
    assert fill(owner, f"/groups/{gid}", f"/groups/{gid}/invite", {"email": MEMBER}).status_code == 303
    token = _token(mailbox)
    # someone the link was forwarded to cannot use it
    assert other.get(f"/groups/invitations/{token}", headers={"accept": "text/html"}).status_code == 404
    forwarded = fill(other, "/groups", "/groups/invitations/accept", {"token": token})
    assert forwarded.status_code == 404
    assert "Join" not in forwarded.text
    assert (
        fill(
            member, f"/groups/invitations/{token}", "/groups/invitations/accept", {"token": token}
        ).status_code
        == 303
    )
    again = fill(member, "/groups", "/groups/invitations/accept", {"token": token})
    assert again.status_code == 404
    assert "already used, expired" in again.text
    assert member.get(f"/groups/invitations/{token}", headers={"accept": "text/html"}).status_code == 404
    # an expired one
    mail = app.readers.groups.invite(
        app.readers.accounts.user_by_email(OWNER).id, gid, STRANGER, base_url="http://t", client="127.0.0.9"
    )
    late = mail.text.split("/groups/invitations/")[1].split()[0]
    assert app.readers.groups.invitation(late, STRANGER).invitation.email == STRANGER
    app.readers.groups.now = lambda: datetime.now(UTC) + timedelta(days=8)
    with pytest.raises(GroupNotFound, match="expired"):
        app.readers.groups.invitation(late, STRANGER)
    with pytest.raises(GroupNotFound):
        app.readers.groups.accept(app.readers.accounts.user_by_email(STRANGER).id, STRANGER, late)


def test_bad_input_is_a_clear_4xx(app: App, site: TestClient) -> None:
    quick_sign_in(site, app, OWNER)
    gid = _group_id(fill(site, "/groups", "/groups", {"name": "G"}))
    me = app.readers.accounts.user_by_email(OWNER).id
    page = f"/groups/{gid}"
    assert fill(site, "/groups", "/groups", {"name": "  "}).status_code == 400
    unknown = fill(site, page, f"{page}/queue", {"paper_id": "2501.99999"})
    assert unknown.status_code == 404
    assert "2501.99999" in unknown.text
    assert fill(site, page, f"{page}/queue", {"paper_id": "not a paper id"}).status_code == 400
    long_note = fill(site, page, f"{page}/queue", {"paper_id": PAPER_IDS[0], "note": "x" * 2001})
    assert long_note.status_code == 400
    assert "2,000" in long_note.text
    assert fill(site, page, f"{page}/queue", {"paper_id": PAPER_IDS[0]}).status_code == 303
    past = fill(
        site,
        page,
        f"{page}/sessions",
        {"starts_at": "2020-01-01T10:00", "presenter": str(me), "paper_id": "vote"},
    )
    assert past.status_code == 400
    assert "past" in past.text
    bad_time = fill(site, page, f"{page}/sessions", {"starts_at": "next friday", "presenter": str(me)})
    assert bad_time.status_code == 400
    bad_zone = fill(
        site,
        page,
        f"{page}/sessions",
        {"starts_at": "2099-01-01T10:00", "timezone": "Mars/Olympus", "presenter": str(me)},
    )
    assert bad_zone.status_code == 400
    api = site.post(
        f"/api/groups/{gid}/sessions",
        json={"starts_at": "2020-01-01T10:00:00+00:00", "presenter_id": me},
        headers={"X-CSRF-Token": _csrf(site)},
    )
    assert api.status_code == 400
    assert api.json()["field"] == "starts_at"
    session = app.readers.groups.schedule(me, gid, datetime.now(UTC) + timedelta(days=1), me, None)
    notes = site.put(
        f"/api/groups/{gid}/sessions/{session.id}/notes",
        json={"body": "n" * 20_001},
        headers={"X-CSRF-Token": _csrf(site)},
    )
    assert notes.status_code == 400
    assert "20,000" in notes.json()["error"]
    assert site.get(f"/api/groups/{gid}/sessions/999999").status_code == 404
    assert site.get("/groups/calendar/nope.ics").status_code == 404
    assert site.get("/groups/calendar/" + "a" * 500 + ".ics").status_code == 404
    assert site.get("/groups/calendar/%00%ff.ics").status_code == 404


def _csrf(client: TestClient) -> str:
    from tests.support.authz import csrf_from

    return csrf_from(client.get("/groups", headers={"accept": "text/html"}).text)
