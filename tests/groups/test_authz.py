"""The authorization matrix of every reading-group route, on SQLite and on PostgreSQL.

Actors: ``anonymous``; ``stranger`` (signed in, never a member); ``removed`` (was a member, removed by the
owner); ``admin`` (an administrator, not a member: groups are private even to admins); ``member``;
``owner``; and ``calendar`` — a member's calendar-feed token sent as a Bearer token, a token without the
right scope (it opens that member's iCalendar feed and nothing else).

For every route and actor: the expected status, and the state change exactly when allowed; every form and
JSON change without its CSRF token is a 403 that changes nothing; every JSON route gives a Bearer API token
the same answers as the session cookie. What one may not know exists is a 404 worded like an unknown id.
Every answer to a signed-in request is ``Cache-Control: private``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete

from paperfeed.adapters.store.schema_accounts import rate_limit_hits
from paperfeed.adapters.store.schema_groups import (
    group_invitations,
    group_members,
    group_mutes,
    group_queue,
    group_searches,
    group_sessions,
    group_votes,
    groups,
    reader_mutes,
)
from paperfeed.bootstrap import App, build_app
from paperfeed.domain.accounts import User
from paperfeed.settings import Settings
from paperfeed.web import create_app
from paperfeed.web.security import CSRF_FIELD, CSRF_HEADER, SESSION_COOKIE
from tests.accounts.conftest import PAPER_IDS, load_papers, make_settings
from tests.support import postgres
from tests.support.authz import SIGNIN, csrf_from
from tests.support.smtp_server import smtp_test_server

pytestmark = pytest.mark.slow  # ~700 requests through the real app per backend

ACTORS = ("anonymous", "stranger", "removed", "admin", "member", "owner", "calendar")
SIGNED_IN = ("stranger", "removed", "admin", "member", "owner")
P1, P2, P3 = PAPER_IDS[0], PAPER_IDS[1], PAPER_IDS[2]


@dataclass
class World:
    app: App
    clients: dict[str, TestClient]
    users: dict[str, User]
    tokens: dict[str, str]  # API tokens
    csrf: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Ctx:
    """One fresh group made for one request: G owned by owner, with member, removed and their traces."""

    gid: int
    sid: int
    invite: str  # an open invitation of the stranger's address
    calendar: str  # the member's calendar token
    removed_calendar: str  # the removed member's old calendar token
    other_gid: int  # a group of the stranger's own
    search_id: int = 0  # a search the group follows
    unsubscribe: str = ""  # the member's one-click unsubscribe token of the weekly digest
    invitation_id: int = 0  # the open invitation of the stranger's address
    other_invitation_id: int = 0  # an open invitation of the stranger's own group


def _make(w: World) -> Ctx:
    g = w.app.readers.groups
    u = w.users
    group = g.create(u["owner"].id, "Matrix group")
    for name in ("member", "removed"):
        g.records.add_member(group.id, u[name].id, f"cal-{name}-{group.id}")
    removed_calendar = g.calendar_token(u["removed"].id, group.id)
    g.remove(u["owner"].id, group.id, u["removed"].id)
    g.queue_add(u["member"].id, group.id, P1, "member's")
    g.queue_add(u["owner"].id, group.id, P2, "owner's")
    g.vote(u["member"].id, group.id, P1)
    g.queue_add(u["owner"].id, group.id, P3)
    session = g.schedule(u["owner"].id, group.id, datetime.now(UTC) + timedelta(days=2), u["member"].id, P3)
    mail = g.invite(u["owner"].id, group.id, u["stranger"].email, base_url="http://testserver", client="m")
    token = re.findall(r"/groups/invitations/(\S+)", mail.text)[0]
    other = g.create(u["stranger"].id, "Stranger's own")
    g.invite(u["stranger"].id, other.id, "friend@example.org", base_url="http://testserver", client="m")
    invitation = g.records.open_invitations(group.id, datetime.now(UTC))[0].id
    other_invitation = g.records.open_invitations(other.id, datetime.now(UTC))[0].id
    for actor in SIGNED_IN:
        w.app.readers.mutes.add(u[actor].id, "word", "matrix")
    w.app.readers.mutes.add_group(group.id, "word", "matrix")
    search = g.add_search(u["member"].id, group.id, "zebrafish")
    g.set_digest(u["member"].id, group.id, True)
    g.set_digest(u["owner"].id, group.id, True)
    stop = w.app.mail.signer.sign("group-unsubscribe", group.id, str(u["member"].id))
    calendar = g.calendar_token(u["member"].id, group.id)
    return Ctx(
        group.id,
        session.id,
        token,
        calendar,
        removed_calendar,
        other.id,
        search.id,
        stop,
        invitation,
        other_invitation,
    )


@dataclass(frozen=True)
class Route:
    name: str
    method: str
    path: Callable[[Ctx], str]
    expect: Mapping[str, int | str]
    form: Callable[[World, Ctx], dict[str, Any]] | None = None
    json: Callable[[World, Ctx], dict[str, Any]] | None = None
    changed: Callable[[World, Ctx], bool] | None = None
    csrf_exempt: bool = False  # RFC 8058 one-click unsubscribe: its signed token is the authorisation

    @property
    def api(self) -> bool:
        return self.path(Ctx(1, 1, "t", "c", "r", 2)).startswith("/api/")

    @property
    def changes(self) -> bool:
        return self.method != "GET"


def _expect(
    *,
    anonymous: int | str,
    calendar: int = 401,
    outsider: int = 404,
    member: int,
    owner: int,
    stranger: int | None = None,
) -> dict[str, int | str]:
    return {
        "anonymous": anonymous,
        "stranger": outsider if stranger is None else stranger,
        "removed": outsider,
        "admin": outsider,
        "member": member,
        "owner": owner,
        "calendar": calendar,
    }


def _url_credential(status: int) -> dict[str, int | str]:
    """A route whose URL carries its credential: the same answer to everyone, but a calendar token sent
    as a Bearer API token is refused before any route looks at the URL (401, docs/security.md)."""
    return {**dict.fromkeys(ACTORS, status), "calendar": 401}


def page_read() -> dict[str, int | str]:
    return _expect(anonymous=SIGNIN, member=200, owner=200)


def page_change(member: int = 303, owner: int = 303) -> dict[str, int | str]:
    return _expect(anonymous=SIGNIN, member=member, owner=owner)


def api(member: int, owner: int) -> dict[str, int | str]:
    return _expect(anonymous=401, member=member, owner=owner)


def _groups(w: World) -> Any:
    return w.app.readers.groups.records


def _queued(paper: str) -> Callable[[World, Ctx], bool]:
    return lambda w, c: _groups(w).queue_entry(c.gid, paper) is not None


def _not(check: Callable[[World, Ctx], bool]) -> Callable[[World, Ctx], bool]:
    return lambda w, c: not check(w, c)


def _member_gone(w: World, c: Ctx) -> bool:
    return _groups(w).membership(c.gid, w.users["member"].id) is None


def _group_gone(w: World, c: Ctx) -> bool:
    return _groups(w).group(c.gid) is None


def _member_owns(w: World, c: Ctx) -> bool:
    m = _groups(w).membership(c.gid, w.users["member"].id)
    return m is not None and m.owner


def _stranger_joined(w: World, c: Ctx) -> bool:
    return _groups(w).membership(c.gid, w.users["stranger"].id) is not None


def _vote_moved(w: World, c: Ctx) -> bool:
    return any(_groups(w).my_vote(c.gid, w.users[a].id) == P2 for a in ("member", "owner"))


def _sessions(w: World, c: Ctx) -> int:
    return len(_groups(w).sessions(c.gid))


def _notes_set(w: World, c: Ctx) -> bool:
    found = _groups(w).session(c.sid)
    return found is not None and found.notes == "edited"


def _session_gone(w: World, c: Ctx) -> bool:
    return _groups(w).session(c.sid) is None


def _digest_off(w: World, c: Ctx) -> bool:
    return any(
        (m := _groups(w).membership(c.gid, w.users[a].id)) is not None and not m.digest
        for a in ("member", "owner")
    )


def _invited(w: World, c: Ctx) -> bool:
    return len(_groups(w).open_invitations(c.gid, datetime.now(UTC))) > 1


def _withdrawn(w: World, c: Ctx) -> bool:
    return not _groups(w).open_invitations(c.gid, datetime.now(UTC))


def _other_withdrawn(w: World, c: Ctx) -> bool:
    return not _groups(w).open_invitations(c.other_gid, datetime.now(UTC))


def _groups_made(w: World, c: Ctx) -> bool:
    return any(g.name == "Made" for a in SIGNED_IN for g, _ in _groups(w).groups_of(w.users[a].id))


def _later() -> str:
    return (datetime.now(UTC) + timedelta(days=5)).strftime("%Y-%m-%dT%H:%M")


ROUTES = [
    # -- pages: reading -------------------------------------------------------------------------------------
    Route(
        "my groups",
        "GET",
        lambda c: "/groups",
        _expect(anonymous=SIGNIN, outsider=200, member=200, owner=200),
    ),
    Route("group page", "GET", lambda c: f"/groups/{c.gid}", page_read()),
    Route(
        "unknown group", "GET", lambda c: "/groups/987654", _expect(anonymous=SIGNIN, member=404, owner=404)
    ),
    Route("session page", "GET", lambda c: f"/groups/{c.gid}/sessions/{c.sid}", page_read()),
    Route(
        "a session through another group's id",
        "GET",
        lambda c: f"/groups/{c.other_gid}/sessions/{c.sid}",
        _expect(anonymous=SIGNIN, member=404, owner=404),
    ),
    Route("archive", "GET", lambda c: f"/groups/{c.gid}/archive", page_read()),
    Route("for the group", "GET", lambda c: f"/groups/{c.gid}/for-the-group", page_read()),
    Route("API: for the group", "GET", lambda c: f"/api/groups/{c.gid}/recommendations", api(200, 200)),
    Route(
        "invitation page",
        "GET",
        lambda c: f"/groups/invitations/{c.invite}",
        _expect(anonymous=SIGNIN, stranger=200, member=404, owner=404),
    ),
    Route(
        "calendar feed (the token is the credential)",
        "GET",
        lambda c: f"/groups/calendar/{c.calendar}.ics",
        _url_credential(200),
    ),
    Route(
        "a removed member's old calendar feed",
        "GET",
        lambda c: f"/groups/calendar/{c.removed_calendar}.ics",
        _url_credential(404),
    ),
    # -- pages: changes -------------------------------------------------------------------------------------
    Route(
        "create a group",
        "POST",
        lambda c: "/groups",
        _expect(anonymous=SIGNIN, outsider=303, member=303, owner=303),
        form=lambda w, c: {"name": "Made"},
        changed=_groups_made,
    ),
    Route(
        "invite",
        "POST",
        lambda c: f"/groups/{c.gid}/invite",
        page_change(member=403),
        form=lambda w, c: {"email": "newcomer@example.org"},
        changed=_invited,
    ),
    Route(
        "withdraw the invitation",
        "POST",
        lambda c: f"/groups/{c.gid}/invitations/{c.invitation_id}/withdraw",
        page_change(member=403),
        form=lambda w, c: {},
        changed=_withdrawn,
    ),
    Route(
        "withdraw another group's invitation through this group's id",
        "POST",
        lambda c: f"/groups/{c.gid}/invitations/{c.other_invitation_id}/withdraw",
        page_change(member=403, owner=404),
        form=lambda w, c: {},
        changed=_other_withdrawn,
    ),
    Route(
        "accept an invitation (the stranger's address)",
        "POST",
        lambda c: "/groups/invitations/accept",
        _expect(anonymous=SIGNIN, stranger=303, member=404, owner=404),
        form=lambda w, c: {"token": c.invite},
        changed=_stranger_joined,
    ),
    Route(
        "leave",
        "POST",
        lambda c: f"/groups/{c.gid}/leave",
        page_change(owner=400),
        form=lambda w, c: {},
        changed=_member_gone,
    ),
    Route(
        "delete the group",
        "POST",
        lambda c: f"/groups/{c.gid}/delete",
        page_change(member=403),
        form=lambda w, c: {},
        changed=_group_gone,
    ),
    Route(
        "remove the member",
        "POST",
        lambda c: f"/groups/{c.gid}/members/remove",
        page_change(member=403),
        form=lambda w, c: {"member": str(w.users["member"].id)},
        changed=_member_gone,
    ),
    Route(
        "hand ownership to the member",
        "POST",
        lambda c: f"/groups/{c.gid}/members/owner",
        page_change(member=403),
        form=lambda w, c: {"member": str(w.users["member"].id)},
        changed=_member_owns,
    ),
    Route(
        "weekly digest off",
        "POST",
        lambda c: f"/groups/{c.gid}/digest",
        page_change(),
        form=lambda w, c: {"on": "0"},
        changed=_digest_off,
    ),
    Route(
        "queue a paper",
        "POST",
        lambda c: f"/groups/{c.gid}/queue",
        page_change(),
        form=lambda w, c: {"paper_id": PAPER_IDS[3], "note": "n"},
        changed=_queued(PAPER_IDS[3]),
    ),
    Route(
        "take the member's paper off the queue",
        "POST",
        lambda c: f"/groups/{c.gid}/queue/remove",
        page_change(),
        form=lambda w, c: {"paper_id": P1},
        changed=_not(_queued(P1)),
    ),
    Route(
        "take the owner's paper off the queue",
        "POST",
        lambda c: f"/groups/{c.gid}/queue/remove",
        page_change(member=403),
        form=lambda w, c: {"paper_id": P2},
        changed=_not(_queued(P2)),
    ),
    Route(
        "vote",
        "POST",
        lambda c: f"/groups/{c.gid}/vote",
        page_change(),
        form=lambda w, c: {"paper_id": P2},
        changed=_vote_moved,
    ),
    Route(
        "schedule a session",
        "POST",
        lambda c: f"/groups/{c.gid}/sessions",
        page_change(member=403),
        form=lambda w, c: {"starts_at": _later(), "presenter": str(w.users["member"].id), "paper_id": "vote"},
        changed=lambda w, c: _sessions(w, c) == 2,
    ),
    Route(
        "session notes",
        "POST",
        lambda c: f"/groups/{c.gid}/sessions/{c.sid}/notes",
        page_change(),
        form=lambda w, c: {"body": "edited"},
        changed=_notes_set,
    ),
    Route(
        "cancel a session",
        "POST",
        lambda c: f"/groups/{c.gid}/sessions/{c.sid}/cancel",
        page_change(member=403),
        form=lambda w, c: {},
        changed=_session_gone,
    ),
    Route(
        "the group's mute rules: add",
        "POST",
        lambda c: f"/groups/{c.gid}/mutes",
        page_change(member=403),
        form=lambda w, c: {"kind": "author", "value": "Ada Fishwick"},
        changed=lambda w, c: len(w.app.readers.mutes.group_rules(c.gid)) == 2,
    ),
    Route(
        "the group's mute rules: remove",
        "POST",
        lambda c: f"/groups/{c.gid}/mutes/remove",
        page_change(member=403),
        form=lambda w, c: {"kind": "word", "value": "matrix"},
        changed=lambda w, c: not w.app.readers.mutes.group_rules(c.gid),
    ),
    Route(
        "follow a search for the group",
        "POST",
        lambda c: f"/groups/{c.gid}/searches",
        page_change(),
        form=lambda w, c: {"q": "glacier"},
        changed=lambda w, c: len(_groups(w).searches(c.gid)) == 2,
    ),
    Route(
        "stop following the group's search",
        "POST",
        lambda c: f"/groups/{c.gid}/searches/{c.search_id}/delete",
        page_change(),
        form=lambda w, c: {},
        changed=lambda w, c: not _groups(w).searches(c.gid),
    ),
    Route(
        "the digest's unsubscribe page (the signed link)",
        "GET",
        lambda c: f"/groups/digest/unsubscribe?t={c.unsubscribe}",
        _url_credential(200),
    ),
    Route(
        "one-click unsubscribe (RFC 8058: the signed link authorises it)",
        "POST",
        lambda c: f"/groups/digest/unsubscribe?t={c.unsubscribe}",
        _url_credential(200),
        form=lambda w, c: {"List-Unsubscribe": "One-Click"},
        changed=lambda w, c: not _groups(w).membership(c.gid, w.users["member"].id).digest,
        csrf_exempt=True,
    ),
    Route(
        "one-click unsubscribe with a forged link",
        "POST",
        lambda c: f"/groups/digest/unsubscribe?t={c.unsubscribe[:-4]}AAAA",
        _url_credential(404),
        form=lambda w, c: {},
        changed=lambda w, c: not _groups(w).membership(c.gid, w.users["member"].id).digest,
        csrf_exempt=True,
    ),
    # -- a reader's own mute rules (everyone signed in has their own) ---------------------------------------
    Route(
        "my mute rules",
        "GET",
        lambda c: "/mutes",
        _expect(anonymous=SIGNIN, outsider=200, member=200, owner=200),
    ),
    Route(
        "mute a word",
        "POST",
        lambda c: "/mutes",
        _expect(anonymous=SIGNIN, outsider=303, member=303, owner=303),
        form=lambda w, c: {"kind": "word", "value": "sheep"},
        changed=lambda w, c: any(len(w.app.readers.mutes.rules(w.users[a].id)) == 2 for a in SIGNED_IN),
    ),
    Route(
        "unmute a word",
        "POST",
        lambda c: "/mutes/remove",
        _expect(anonymous=SIGNIN, outsider=303, member=303, owner=303),
        form=lambda w, c: {"kind": "word", "value": "matrix"},
        changed=lambda w, c: any(not w.app.readers.mutes.rules(w.users[a].id) for a in SIGNED_IN),
    ),
    Route(
        "API: my mute rules",
        "GET",
        lambda c: "/api/me/mutes",
        _expect(anonymous=401, outsider=200, member=200, owner=200),
    ),
    Route(
        "API: mute a word",
        "POST",
        lambda c: "/api/me/mutes",
        _expect(anonymous=401, outsider=201, member=201, owner=201),
        json=lambda w, c: {"kind": "word", "value": "sheep"},
        changed=lambda w, c: any(len(w.app.readers.mutes.rules(w.users[a].id)) == 2 for a in SIGNED_IN),
    ),
    Route(
        "API: unmute a word",
        "DELETE",
        lambda c: "/api/me/mutes?kind=word&value=matrix",
        _expect(anonymous=401, outsider=200, member=200, owner=200),
        json=lambda w, c: {},
        changed=lambda w, c: any(not w.app.readers.mutes.rules(w.users[a].id) for a in SIGNED_IN),
    ),
    # -- search my library (every signed-in reader searches their own) -----------------------------------
    Route(
        "search my library",
        "GET",
        lambda c: "/library/search?q=zebrafish",
        _expect(anonymous=SIGNIN, outsider=200, member=200, owner=200),
    ),
    Route(
        "API: search my library",
        "GET",
        lambda c: "/api/me/library/search?q=zebrafish",
        _expect(anonymous=401, outsider=200, member=200, owner=200),
    ),
    # -- JSON API -------------------------------------------------------------------------------------------
    Route(
        "API: my groups",
        "GET",
        lambda c: "/api/groups",
        _expect(anonymous=401, outsider=200, member=200, owner=200),
    ),
    Route(
        "API: create a group",
        "POST",
        lambda c: "/api/groups",
        _expect(anonymous=401, outsider=201, member=201, owner=201),
        json=lambda w, c: {"name": "Made"},
        changed=_groups_made,
    ),
    Route("API: a group", "GET", lambda c: f"/api/groups/{c.gid}", api(200, 200)),
    Route(
        "API: invite",
        "POST",
        lambda c: f"/api/groups/{c.gid}/invitations",
        api(403, 202),
        json=lambda w, c: {"email": "newcomer@example.org"},
        changed=_invited,
    ),
    Route("API: open invitations", "GET", lambda c: f"/api/groups/{c.gid}/invitations", api(403, 200)),
    Route(
        "API: withdraw an invitation",
        "DELETE",
        lambda c: f"/api/groups/{c.gid}/invitations/{c.invitation_id}",
        api(403, 200),
        json=lambda w, c: {},
        changed=_withdrawn,
    ),
    Route(
        "API: queue a paper",
        "POST",
        lambda c: f"/api/groups/{c.gid}/queue",
        api(201, 201),
        json=lambda w, c: {"paper_id": PAPER_IDS[3]},
        changed=_queued(PAPER_IDS[3]),
    ),
    Route(
        "API: take the owner's paper off the queue",
        "DELETE",
        lambda c: f"/api/groups/{c.gid}/queue/{P2}",
        api(403, 200),
        json=lambda w, c: {},
        changed=_not(_queued(P2)),
    ),
    Route(
        "API: vote",
        "PUT",
        lambda c: f"/api/groups/{c.gid}/vote",
        api(200, 200),
        json=lambda w, c: {"paper_id": P2},
        changed=_vote_moved,
    ),
    Route(
        "API: schedule a session",
        "POST",
        lambda c: f"/api/groups/{c.gid}/sessions",
        api(403, 201),
        json=lambda w, c: {
            "starts_at": (datetime.now(UTC) + timedelta(days=4)).isoformat(),
            "presenter_id": w.users["member"].id,
        },
        changed=lambda w, c: _sessions(w, c) == 2,
    ),
    Route("API: a session", "GET", lambda c: f"/api/groups/{c.gid}/sessions/{c.sid}", api(200, 200)),
    Route(
        "API: session notes",
        "PUT",
        lambda c: f"/api/groups/{c.gid}/sessions/{c.sid}/notes",
        api(200, 200),
        json=lambda w, c: {"body": "edited"},
        changed=_notes_set,
    ),
    Route(
        "API: leave",
        "POST",
        lambda c: f"/api/groups/{c.gid}/leave",
        api(200, 400),
        json=lambda w, c: {},
        changed=_member_gone,
    ),
    Route(
        "API: remove the member",
        "DELETE",
        lambda c: f"/api/groups/{c.gid}/members/{0}",
        api(403, 200),
        json=lambda w, c: {},
        changed=_member_gone,
    ),
    Route(
        "API: hand ownership over",
        "PUT",
        lambda c: f"/api/groups/{c.gid}/owner",
        api(403, 200),
        json=lambda w, c: {"user_id": w.users["member"].id},
        changed=_member_owns,
    ),
]


def _path(route: Route, w: World, c: Ctx) -> str:
    path = route.path(c)
    return path.replace("/members/0", f"/members/{w.users['member'].id}")


# -- the world --------------------------------------------------------------------------------------------


def _settings(tmp: Path, smtp: Any, url: str | None) -> Settings:
    settings = make_settings(tmp, smtp)
    return settings.model_copy(update={"database_url": url}) if url else settings


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with ExitStack() as stack:
        url = None
        if request.param == "postgresql":
            server = request.getfixturevalue("pg_server")
            url = stack.enter_context(postgres.database(server))
        smtp = stack.enter_context(smtp_test_server())
        settings = _settings(tmp_path_factory.mktemp("groups-matrix"), smtp, url)
        app = build_app(settings)
        stack.callback(app.close)
        load_papers(app)
        clients = {
            a: stack.enter_context(
                TestClient(create_app(lambda: build_app(settings)), follow_redirects=False)
            )
            for a in ACTORS
        }
        w = World(app, clients, {}, {})
        for actor in SIGNED_IN:
            email = f"{actor}@example.org"
            app.readers.accounts.sign_up(email, None, None, client="matrix", base_url="http://testserver")
            user = app.readers.accounts.user_by_email(email)
            app.readers.accounts.store.mark_verified(user.id, app.readers.accounts.clock())
            if actor == "admin":
                app.readers.accounts.set_role(email, "admin")
            w.users[actor] = app.readers.accounts.user_by_email(email)
            w.tokens[actor] = app.readers.accounts.create_api_token(w.users[actor], "matrix")[1]
        yield w


def _fresh(w: World) -> Ctx:
    with w.app.core.store.engine.begin() as conn:
        conn.execute(delete(rate_limit_hits))
        for table in (
            group_votes, group_queue, group_sessions, group_invitations, group_members, group_mutes,
            group_searches, groups, reader_mutes,
        ):  # fmt: skip
            conn.execute(delete(table))
    return _make(w)


def _client(w: World, actor: str, c: Ctx) -> tuple[TestClient, dict[str, str]]:
    client = w.clients[actor]
    client.cookies.clear()
    if actor == "calendar":
        return client, {"authorization": f"Bearer {c.calendar}"}
    if actor != "anonymous":
        client.cookies.set(SESSION_COOKIE, w.app.readers.accounts.create_session(w.users[actor]).session)
    return client, {}


def _call(route: Route, w: World, actor: str, c: Ctx, *, csrf: bool = True, bearer: bool = False) -> Any:
    path = _path(route, w, c)
    if bearer:
        client = w.clients[actor]
        client.cookies.clear()
        headers = {"authorization": f"Bearer {w.tokens[actor]}"}
        return client.request(
            route.method, path, json=route.json(w, c) if route.json else None, headers=headers
        )
    client, headers = _client(w, actor, c)
    if not route.changes:
        return client.request(
            "GET", path, headers={"accept": "text/html" if not route.api else "application/json", **headers}
        )
    token = ""
    if csrf and actor not in ("calendar",):
        token = csrf_from(client.get("/signin", headers={"accept": "text/html"}).text)
    if route.api:
        if token:
            headers[CSRF_HEADER] = token
        return client.request(
            route.method,
            path,
            json=route.json(w, c) if route.json else {},
            headers={"accept": "application/json", **headers},
        )
    form = dict(route.form(w, c) if route.form else {})
    if token:
        form[CSRF_FIELD] = token
    return client.request(route.method, path, data=form, headers={"accept": "text/html", **headers})


def _outcome(route: Route, reply: Any) -> int | str:
    if reply.status_code == 303 and reply.headers.get("location", "").startswith("/signin?next="):
        return SIGNIN
    return int(reply.status_code)


def _allowed(expected: int | str) -> bool:
    return expected in (200, 201, 202, 204, 303)


IDS = [r.name for r in ROUTES]


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_every_actor_gets_what_they_may(world: World, route: Route) -> None:
    for actor in ACTORS:
        c = _fresh(world)
        reply = _call(route, world, actor, c)
        assert _outcome(route, reply) == route.expect[actor], (actor, reply.status_code, reply.text[:300])
        if actor in SIGNED_IN:
            assert "private" in reply.headers.get("cache-control", ""), (actor, reply.headers)
        if route.changed is not None:
            assert route.changed(world, c) is _allowed(route.expect[actor]), (actor, "state change")
        if actor in ("stranger", "removed", "admin") and reply.status_code == 404:
            assert "Matrix group" not in reply.text  # nothing about the group leaks


CHANGES = [r for r in ROUTES if r.changes and not r.csrf_exempt]


@pytest.mark.parametrize("route", CHANGES, ids=[r.name for r in CHANGES])
def test_without_the_csrf_token_nothing_happens(world: World, route: Route) -> None:
    for actor in SIGNED_IN:
        c = _fresh(world)
        reply = _call(route, world, actor, c, csrf=False)
        assert reply.status_code == 403, (actor, reply.text[:300])
        if route.changed is not None:
            assert route.changed(world, c) is False, (actor, "changed without a CSRF token")


APIS = [r for r in ROUTES if r.api]


@pytest.mark.parametrize("route", APIS, ids=[r.name for r in APIS])
def test_bearer_api_tokens_get_the_same_answers(world: World, route: Route) -> None:
    for actor in SIGNED_IN:
        c = _fresh(world)
        reply = _call(route, world, actor, c, bearer=True)
        assert reply.status_code == route.expect[actor], (actor, reply.text[:300])
        assert "private" in reply.headers.get("cache-control", "")
        if route.changed is not None:
            assert route.changed(world, c) is _allowed(route.expect[actor]), (actor, "state change")


def test_group_ids_cannot_be_told_apart_from_unknown_ones(world: World) -> None:
    """No enumeration: a stranger's 404 for an existing group is byte for byte the one for a free id."""
    c = _fresh(world)
    client, _ = _client(world, "stranger", c)
    for kind in ("text/html", "application/json"):
        prefix = "" if kind == "text/html" else "/api"
        real = client.get(f"{prefix}/groups/{c.gid}", headers={"accept": kind})
        free = client.get(f"{prefix}/groups/{c.gid + 100000}", headers={"accept": kind})
        assert real.status_code == free.status_code == 404
        same = real.text.replace(f"/groups/{c.gid}", "/groups/N").replace(f"group {c.gid}", "group N")
        assert same == free.text.replace(f"/groups/{c.gid + 100000}", "/groups/N").replace(
            f"group {c.gid + 100000}", "group N"
        )
