"""One real app on a real SQLite store with two readers and data in every area, for the tests that walk
every route of the app (``app.routes``, through ``tests/support/routes.py``).

Ada owns a public collection, a reading group with a queued paper and a session, a private tag, a note,
a saved search with its alert feed, a comment and an upvote; Bob is another reader. Both have a session
and a personal API token. ``VALUES`` fills every path parameter of the app with something that exists
(Ada's where a reader owns it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.accounts import User
from paperfeed.settings import Settings
from paperfeed.web import create_app
from tests.accounts.conftest import PAPER_IDS, add_topic, load_papers, make_settings
from tests.support.authz import csrf_from
from tests.support.routes import endpoints
from tests.support.smtp_server import smtp_test_server

_PARAM = re.compile(r"{([^}:]+)(?::[^}]+)?}")


@dataclass
class Reader:
    user: User
    session: str
    token: str


@dataclass
class Site:
    """The app under a TestClient, the App behind it for direct calls, the readers and path values."""

    client: TestClient
    app: App
    settings: Settings
    ada: Reader
    bob: Reader
    values: dict[str, str] = field(default_factory=dict)

    @property
    def routes(self) -> list[Any]:
        """Every endpoint of the app (included routers flattened)."""
        return list(endpoints(self.client.app.routes))  # type: ignore[attr-defined]

    def fill(self, path: str) -> str:
        return _PARAM.sub(lambda m: self.values[m[1]], path)

    def csrf(self, session: str | None) -> tuple[str, str]:
        """A (CSRF cookie, token) pair for a browser with ``session`` (None: anonymous)."""
        self.client.cookies.clear()
        if session:
            self.client.cookies.set("pf_session", session)
        page = self.client.get("/signin", headers={"accept": "text/html"})
        cookie = self.client.cookies.get("pf_csrf") or ""
        self.client.cookies.clear()
        return cookie, csrf_from(page.text)


def _reader(app: App, email: str, name: str) -> Reader:
    accounts = app.readers.accounts
    accounts.sign_up(email, None, name, client="tests", base_url="http://testserver")
    user = accounts.user_by_email(email)
    accounts.store.mark_verified(user.id, accounts.clock())
    user = accounts.user_by_email(email)
    return Reader(user, accounts.create_session(user).session, accounts.create_api_token(user, "tests")[1])


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with ExitStack() as stack:
        smtp = stack.enter_context(smtp_test_server())
        settings = make_settings(Path(tmp_path_factory.mktemp("routes")) / "data", smtp)
        app = build_app(settings)
        stack.callback(app.close)
        load_papers(app)
        add_topic(app.core.store, 1, "Zebrafish gaits")
        ada = _reader(app, "ada@example.org", "Ada Owner")
        bob = _reader(app, "bob@example.org", "Bob Viewer")
        shared = app.readers.library.create_tag(ada.user.id, "Shared reading", public=True)
        app.readers.library.save(ada.user.id, PAPER_IDS[0], [shared.name, "Private pile"])
        app.readers.library.set_note(ada.user.id, PAPER_IDS[0], "Ada's private note")
        search = app.readers.library.add_search(ada.user.id, "Zebra alert", "zebrafish", None)
        comment = app.readers.community.add_comment(ada.user, PAPER_IDS[0], "A comment by Ada")
        app.readers.community.upvote(ada.user, PAPER_IDS[0])
        token_id = app.readers.accounts.list_api_tokens(ada.user)[0].id
        group = app.readers.groups.create(ada.user.id, "Ada's journal club")
        app.readers.groups.queue_add(ada.user.id, group.id, PAPER_IDS[1], "For next week")
        starts = app.readers.groups.now() + timedelta(days=3)
        session = app.readers.groups.schedule(ada.user.id, group.id, starts, ada.user.id, None)
        app.readers.groups.invite(
            ada.user.id, group.id, "invited@example.org", base_url="http://testserver", client="tests"
        )
        invitation = app.readers.groups.invitations(ada.user.id, group.id)[0]
        values = {
            "paper_id": PAPER_IDS[0],
            "day": "2025-01-06",
            "week": "2025-W02",
            "month": "2025-01",
            "tag_id": str(shared.id),
            "search_id": str(search.id),
            "comment_id": str(comment.id),
            "token": app.readers.library.feed_token(ada.user.id, search.id),
            "topic_ref": "1",
            "token_id": str(token_id),
            "user_id": str(bob.user.id),
            "group_id": str(group.id),
            "session_id": str(session.id),
            "member_id": str(ada.user.id),
            "invitation_id": str(invitation.id),
        }
        client = stack.enter_context(
            TestClient(create_app(lambda: build_app(settings)), follow_redirects=False)
        )
        yield Site(client, app, settings, ada, bob, values)
