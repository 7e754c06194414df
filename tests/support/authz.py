"""The authorization matrix: every state-changing route × anonymous / user / other user / admin.

Each area lists its routes in ``tests/<area>/authz_routes.py`` as ``ROUTES: list[Route]``;
``tests/accounts/test_authz_matrix.py`` finds those files and runs every route for every actor against
the real app on a real SQLite store, then once more without the CSRF token (which must be a 403 with no
state change) and, for JSON routes, with a Bearer token instead of the session cookie.

A route::

    Route(
        "revoke a token (page)",
        "POST",
        lambda w, ctx: f"/account/tokens/{ctx['token_id']}/revoke",
        expect={"anonymous": SIGNIN, "user": 303, "other": 404, "admin": 404},
        setup=lambda w: {"token_id": w.app.readers.accounts.create_api_token(w.users["user"], "t")[0].id},
        changed=lambda w, ctx: not w.app.readers.accounts.list_api_tokens(w.users["user"]),
    )

``setup`` runs before every single request (so each starts from the same state) and makes whatever the
route acts on, owned by ``w.users["user"]``. ``changed`` (optional) says whether the state change
happened: it must be True after an allowed request and False after a refused one. ``expect`` maps each
actor to the status code, or :data:`SIGNIN` for "redirected to the sign-in page" (HTML routes) — JSON
routes answer 401 instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from fastapi.testclient import TestClient

from paperfeed.bootstrap import App
from paperfeed.domain.accounts import User
from paperfeed.web.security import CSRF_FIELD, CSRF_HEADER, SESSION_COOKIE

__all__ = ["ACTORS", "PASSWORD", "SIGNIN", "Actor", "Route", "World", "csrf_from"]

Actor = Literal["anonymous", "user", "other", "admin"]
ACTORS: tuple[Actor, ...] = ("anonymous", "user", "other", "admin")
SIGNIN = "signin"  # expected outcome: 303 to /signin?next=…
PASSWORD = "correct horse battery"  # every matrix user's password

_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_from(html: str) -> str:
    """The CSRF token of the first form on a page."""
    found = _CSRF.search(html)
    assert found is not None, "no csrf_token field on the page"
    return found.group(1)


@dataclass
class World:
    """One app on one store with a browser (TestClient) per actor; ``app`` is for direct service calls."""

    app: App
    clients: dict[Actor, TestClient]
    users: dict[Actor, User]
    tokens: dict[Actor, str]  # a personal API token per signed-in actor
    paper_ids: list[str]
    extra: dict[str, Any] = field(default_factory=dict)  # for areas to stash their own fixtures

    def browser(self, actor: Actor) -> TestClient:
        """The actor's client with a fresh session (a route may have ended the previous one)."""
        client = self.clients[actor]
        client.cookies.clear()
        if actor != "anonymous":
            session = self.app.readers.accounts.create_session(self.users[actor]).session
            client.cookies.set(SESSION_COOKIE, session)
        return client

    def csrf(self, client: TestClient) -> str:
        """The CSRF token a page gives this client (sets the CSRF cookie on first visit)."""
        page = client.get("/signin", headers={"accept": "text/html"})
        assert page.status_code == 200, page.status_code
        return csrf_from(page.text)

    def new_user(self, email: str, *, role: str = "user", password: bool = True) -> User:
        """A verified user with :data:`PASSWORD` (or, faster, none: sign-in by link only)."""
        accounts = self.app.readers.accounts
        existing = accounts.store.user_by_email(email)
        if existing is not None:
            return existing.user
        secret = PASSWORD if password else None
        accounts.sign_up(email, secret, None, client="matrix-setup", base_url="http://testserver")
        stored = accounts.store.user_by_email(email)
        assert stored is not None
        accounts.store.mark_verified(stored.user.id, accounts.clock())
        if role != "user":
            accounts.set_role(email, role)
        refreshed = accounts.store.user_by_email(email)
        assert refreshed is not None
        return refreshed.user


Path = str | Callable[[World, dict[str, Any]], str]
Payload = Mapping[str, Any] | Callable[[World, dict[str, Any]], Mapping[str, Any]] | None


@dataclass(frozen=True)
class Route:
    name: str
    method: str
    path: Path
    expect: Mapping[Actor, int | str]
    form: Payload = None  # an HTML form post (the CSRF field is added)
    json: Payload = None  # a JSON API call (the CSRF header is added; Bearer runs need none)
    setup: Callable[[World], dict[str, Any]] | None = None
    changed: Callable[[World, dict[str, Any]], bool] | None = None
    bearer: Mapping[Actor, int] | None = None  # what a Bearer token gets, when not ``expect``

    @property
    def api(self) -> bool:
        return self.json is not None or (isinstance(self.path, str) and self.path.startswith("/api/"))

    def resolve(self, world: World, ctx: dict[str, Any]) -> tuple[str, Mapping[str, Any] | None]:
        path = self.path(world, ctx) if callable(self.path) else self.path
        payload = self.json if self.json is not None else self.form
        body = payload(world, ctx) if callable(payload) else payload
        return path, body

    def call(
        self,
        world: World,
        actor: Actor,
        ctx: dict[str, Any],
        *,
        csrf: bool = True,
        bearer: bool = False,
    ) -> Any:
        """Send this route's request as ``actor``; returns the httpx response."""
        path, body = self.resolve(world, ctx)
        if bearer:
            client = world.clients[actor]
            client.cookies.clear()
            headers = {"authorization": f"Bearer {world.tokens[actor]}"} if actor != "anonymous" else {}
            return client.request(
                self.method, path, json=body if self.json is not None else None, headers=headers
            )
        client = world.browser(actor)
        token = world.csrf(client)
        if self.api:
            headers = {"accept": "application/json"}
            if csrf:
                headers[CSRF_HEADER] = token
            return client.request(self.method, path, json=body, headers=headers)
        form = dict(body or {})
        if csrf:
            form[CSRF_FIELD] = token
        return client.request(self.method, path, data=form, headers={"accept": "text/html"})
