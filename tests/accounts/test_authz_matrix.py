"""The authorization matrix of every area: anonymous / user / other user / admin × every state-changing route.

Routes come from every ``tests/<area>/authz_routes.py`` (``ROUTES``; the format is in
tests/support/authz.py). For each route: every actor gets the expected outcome and the state changes
exactly when allowed; without the CSRF token the request is a 403 that changes nothing; JSON routes
give the same answers to a Bearer token (no cookie, no CSRF token). Rate-limit counts are cleared
before each request: this matrix is about who may do what, tests/accounts/test_security.py about limits.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete

from paperfeed.adapters.store.schema_accounts import rate_limit_hits
from paperfeed.bootstrap import build_app
from paperfeed.web import create_app
from tests.support.authz import ACTORS, SIGNIN, Actor, Route, World
from tests.support.smtp_server import smtp_test_server

from .conftest import PAPER_IDS, load_papers, make_settings

pytestmark = pytest.mark.slow  # ~130 requests through the real app; a minute on a busy 2-core machine

TESTS = Path(__file__).resolve().parents[1]


def _all_routes() -> list[tuple[str, Route]]:
    found: list[tuple[str, Route]] = []
    for path in sorted(TESTS.glob("*/authz_routes.py")):
        module = importlib.import_module(f"tests.{path.parent.name}.authz_routes")
        found.extend((path.parent.name, route) for route in module.ROUTES)
    return found


ROUTES = _all_routes()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with ExitStack() as stack:
        smtp = stack.enter_context(smtp_test_server())
        settings = make_settings(tmp_path_factory.mktemp("matrix"), smtp)
        app = build_app(settings)
        stack.callback(app.close)
        load_papers(app)
        clients: dict[Actor, TestClient] = {
            actor: stack.enter_context(
                TestClient(create_app(lambda: build_app(settings)), follow_redirects=False)
            )
            for actor in ACTORS
        }
        w = World(app=app, clients=clients, users={}, tokens={}, paper_ids=list(PAPER_IDS))
        people: tuple[tuple[Actor, str, str], ...] = (
            ("user", "user@example.org", "user"),
            ("other", "other@example.org", "user"),
            ("admin", "admin@example.org", "admin"),
        )
        for actor, email, role in people:
            w.users[actor] = w.new_user(email, role=role)
            w.tokens[actor] = app.readers.accounts.create_api_token(w.users[actor], "matrix")[1]
        yield w


def _outcome(route: Route, response: Any) -> int | str:
    status: int = response.status_code
    if status == 303 and not route.api and response.headers.get("location", "").startswith("/signin?next="):
        return SIGNIN
    return status


def _fresh(world: World, route: Route) -> dict[str, Any]:
    with world.app.core.store.engine.begin() as conn:
        conn.execute(delete(rate_limit_hits))
    for actor, token in world.tokens.items():  # a password change revokes tokens: issue new ones
        if world.app.readers.accounts.user_for_api_token(token) is None:
            world.tokens[actor] = world.app.readers.accounts.create_api_token(world.users[actor], "matrix")[1]
    return route.setup(world) if route.setup else {}


def _allowed(expected: int | str) -> bool:
    return expected in (200, 201, 204, 303)


@pytest.mark.parametrize(("area", "route"), ROUTES, ids=[f"{a}: {r.name}" for a, r in ROUTES])
def test_every_actor(world: World, area: str, route: Route) -> None:
    for actor in ACTORS:
        ctx = _fresh(world, route)
        got = route.call(world, actor, ctx)
        assert _outcome(route, got) == route.expect[actor], (actor, got.status_code, got.text[:300])
        if route.changed is not None:
            assert route.changed(world, ctx) is _allowed(route.expect[actor]), (actor, "state change")


@pytest.mark.parametrize(("area", "route"), ROUTES, ids=[f"{a}: {r.name}" for a, r in ROUTES])
def test_without_csrf_token_nothing_happens(world: World, area: str, route: Route) -> None:
    for actor in ACTORS:
        ctx = _fresh(world, route)
        refused = route.call(world, actor, ctx, csrf=False)
        assert refused.status_code == 403, (actor, refused.text[:300])
        if route.changed is not None:
            assert route.changed(world, ctx) is False, (actor, "changed without a CSRF token")


API_ROUTES = [(a, r) for a, r in ROUTES if r.api]


@pytest.mark.parametrize(("area", "route"), API_ROUTES, ids=[f"{a}: {r.name}" for a, r in API_ROUTES])
def test_bearer_tokens_get_the_same_answers(world: World, area: str, route: Route) -> None:
    for actor in ("user", "other", "admin"):
        ctx = _fresh(world, route)
        got = route.call(world, actor, ctx, bearer=True)
        expected = (route.bearer or route.expect)[actor]
        assert got.status_code == expected, (actor, got.text[:300])
        if route.changed is not None:
            assert route.changed(world, ctx) is _allowed(expected), (actor, "state change")


def test_every_area_with_state_changing_routes_is_in_the_matrix() -> None:
    areas = {a for a, _ in ROUTES}
    assert "accounts" in areas
    assert len(ROUTES) >= 20
