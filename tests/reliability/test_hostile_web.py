"""Hostile strings through every route of the web app, as an anonymous visitor and as a signed-in user.

The routes are enumerated from the app itself (``app.routes``), so a new route is covered the day it is
added. For every route, method and hostile string (tests/support/hostile.py), one request fills *every*
path parameter, query parameter, form field and JSON field with that string (forms and JSON calls carry
a valid CSRF token, so the handlers really run). Afterwards:

* no answer is a 5xx;
* a request that was refused (4xx) changed nothing: the row counts of every table are as before
  (sessions, rate-limit hits and one-time links excepted: refusing a sign-in is allowed to count it);
* at the end the store is intact (SQLite ``quick_check``) and ``paperfeed check`` finds the indexes
  consistent with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, text

from paperfeed.adapters.store.schema import metadata
from paperfeed.bootstrap import build_app
from paperfeed.web import create_app
from paperfeed.web.security import CSRF_FIELD, CSRF_HEADER
from tests.accounts.conftest import PAPER_IDS, load_papers, make_settings
from tests.support.authz import World
from tests.support.hostile import STRINGS
from tests.support.smtp_server import smtp_test_server

pytestmark = pytest.mark.slow

# A million characters in every field of every route takes minutes; 50 k exercises the same limits.
VALUES = [(name, value if len(value) <= 50_000 else value[:50_000]) for name, value in STRINGS]
VOLATILE = {"sessions", "rate_limit_hits", "one_time_links", "checkpoints", "job_runs", "job_leases"}
_PARAM = re.compile(r"{([^}:]+)(?::[^}]+)?}")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with ExitStack() as stack:
        smtp = stack.enter_context(smtp_test_server())
        settings = make_settings(tmp_path_factory.mktemp("hostile"), smtp, debug=True)
        app = build_app(settings)
        stack.callback(app.close)
        load_papers(app)
        clients = {
            actor: stack.enter_context(
                TestClient(create_app(lambda: build_app(settings)), follow_redirects=False)
            )
            for actor in ("anonymous", "user")
        }
        w = World(app=app, clients=clients, users={}, tokens={}, paper_ids=list(PAPER_IDS))  # type: ignore[arg-type]
        w.users["user"] = w.new_user("user@example.org")
        yield w


def _flatten(routes: list[Any]) -> Iterator[Any]:
    """Every endpoint, also inside included routers (FastAPI ≥ 0.165 keeps those as one lazy entry)."""
    for route in routes:
        if hasattr(route, "effective_candidates"):
            yield from _flatten(list(route.effective_candidates()))
        elif hasattr(route, "dependant") or hasattr(route, "endpoint"):
            yield route


def _routes() -> list[tuple[str, str, Any]]:
    web = create_app(lambda: build_app())  # only its route table is read: nothing is built
    found = []
    for route in _flatten(list(web.routes)):
        for method in sorted(getattr(route, "methods", None) or ()):
            if method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
                found.append((method, route.path, route))
    return sorted(found, key=lambda r: (r[1], r[0]))


ROUTES = _routes()


def _counts(world: World) -> dict[str, int]:
    with world.app.core.store.engine.connect() as conn:
        return {
            name: int(conn.execute(select(func.count()).select_from(table)).scalar_one())
            for name, table in metadata.tables.items()
            if name not in VOLATILE
        }


def _request(world: World, actor: str, method: str, path: str, route: Any, value: str) -> Any:
    client = world.browser(actor)  # type: ignore[arg-type]
    token = world.csrf(client)
    safe = value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")  # a URL cannot carry one
    short = safe[:500]  # × every parameter, percent-encoded: within what servers accept in a URL
    url = _PARAM.sub(lambda _m: quote(short, safe="") or "%20", path)
    dependant = getattr(route, "dependant", None)
    if dependant is None:  # a plain Starlette route (the OpenAPI document, the docs page)
        return client.request(method, url, headers={"accept": "text/html"})
    query = {p.alias: short for p in dependant.query_params}
    headers = {CSRF_HEADER: token}
    body_fields = [f.alias for f in dependant.body_params]
    form = any(type(f.field_info).__name__ in ("Form", "File") for f in dependant.body_params)
    if method == "GET" or not body_fields:
        headers["accept"] = "application/json" if path.startswith("/api/") else "text/html"
        return client.request(method, url, params=query, headers=headers, data={CSRF_FIELD: token})
    if form:
        data = dict.fromkeys(body_fields, safe)
        data[CSRF_FIELD] = token
        return client.request(
            method, url, params=query, data=data, headers={**headers, "accept": "text/html"}
        )
    model = dependant.body_params[0]
    annotation = getattr(model.field_info, "annotation", None)
    fields = getattr(annotation, "model_fields", None)
    body: Any = dict.fromkeys(fields, value) if fields else value
    if len(dependant.body_params) > 1:
        body = {f.alias: value for f in dependant.body_params}
    raw = _json(body)
    return client.request(
        method,
        url,
        params=query,
        content=raw,
        headers={**headers, "content-type": "application/json", "accept": "application/json"},
    )


def _json(body: Any) -> bytes:
    """JSON with lone surrogates escaped as \\udXXX (what a hostile client can send; orjson refuses)."""
    import json

    return json.dumps(body, ensure_ascii=True).encode()


@pytest.mark.parametrize(("method", "path", "route"), ROUTES, ids=[f"{m} {p}" for m, p, _r in ROUTES])
@pytest.mark.parametrize("actor", ["anonymous", "user"])
def test_hostile_values_in_every_parameter(
    world: World, actor: str, method: str, path: str, route: Any
) -> None:
    failures = []
    for name, value in VALUES:
        before = _counts(world)
        reply = _request(world, actor, method, path, route, value)
        if reply.status_code >= 500:
            failures.append(f"{name}: {reply.status_code} {reply.text[:200]}")
        elif reply.status_code >= 400:
            after = _counts(world)
            changed = {t: (before[t], after[t]) for t in before if before[t] != after[t]}
            if changed:
                failures.append(f"{name}: refused with {reply.status_code} but changed {changed}")
    assert not failures, failures[:5]


def test_the_store_and_indexes_are_intact_afterwards(world: World) -> None:
    with world.app.core.store.engine.connect() as conn:
        assert conn.execute(text("PRAGMA quick_check")).scalar() == "ok"
    app = world.app
    report = app.maintenance.check.check()
    assert report.ok, [f.problem for p in report.probes for f in p.findings]


def test_the_sweep_covers_the_app() -> None:
    paths = {p for _m, p, _r in ROUTES}
    assert len(ROUTES) > 60, len(ROUTES)
    for expected in ("/api/papers/search", "/signin", "/papers/{paper_id:path}/comments", "/submit"):
        assert expected in paths
