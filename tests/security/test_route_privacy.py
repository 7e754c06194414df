"""One rule over every route of the app: an answer whose body depends on who asks is never ``public``.

Every route of ``app.routes`` is asked anonymously and by two readers — Ada, who owns the collection,
alert, comment and note the paths name, and Bob, another reader — each once with the session cookie and
once with a Bearer token. A reader's answer may be ``public`` only when it is the anonymous answer
byte for byte and says which request headers it varies on; any other answer to a reader must be
``private`` or ``no-store``. Anonymous reads of the page cache's routes stay ``public`` and are served
from the cache the second time. State-changing routes are sent too (with the CSRF token or a token):
none of their answers may be ``public`` to a reader. ``/mcp`` is asked with a token like a route.
"""

from __future__ import annotations

from typing import Any

import pytest

from paperfeed.web.public_cache import policy_for
from tests.support.routes import get_routes

from .conftest import Reader, Site

HTML = {"accept": "text/html"}
_MCP = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _vary(answer: Any) -> set[str]:
    return {v.strip().lower() for v in answer.headers.get("vary", "").split(",") if v.strip()}


def _cache(answer: Any) -> str:
    return str(answer.headers.get("cache-control", "")).lower()


def _ask(site: Site, path: str, headers: dict[str, str], reader: Reader | None, how: str) -> Any:
    client = site.client
    client.cookies.clear()
    sent = dict(headers)
    if reader is not None and how == "cookie":
        client.cookies.set("pf_session", reader.session)
    elif reader is not None:
        sent["authorization"] = f"Bearer {reader.token}"
    try:
        return client.get(path, headers=sent)
    finally:
        client.cookies.clear()


def _problem(anonymous: Any, answer: Any) -> str | None:
    """Why ``answer`` (to a reader) breaks the rule, or None."""
    cache = _cache(answer)
    if "public" not in cache:
        if answer.status_code == 200 and not ("private" in cache or "no-store" in cache):
            return f"a reader's 200 says Cache-Control {cache!r}: neither private nor no-store"
        return None
    if answer.content != anonymous.content:
        return f"public ({cache!r}) although it differs from the anonymous answer"
    return None


def _get_paths(site: Site) -> list[str]:
    return sorted({site.fill(r.path) for r in get_routes(site.client.app)})


def _check_path(site: Site, path: str, headers: dict[str, str]) -> list[str]:
    problems = []
    anonymous = _ask(site, path, headers, None, "")
    differs = False
    for name, reader in (("Ada", site.ada), ("Bob", site.bob)):
        for how in ("cookie", "bearer"):
            answer = _ask(site, path, headers, reader, how)
            differs = differs or answer.content != anonymous.content
            problem = _problem(anonymous, answer)
            if problem:
                problems.append(f"GET {path} {headers} as {name} ({how}): {answer.status_code} {problem}")
    # a shared cache must keep the anonymous copy of an answer readers get otherwise apart
    if differs and "public" in _cache(anonymous) and not {"cookie", "authorization"} <= _vary(anonymous):
        problems.append(f"GET {path} {headers}: public to anonymous, readers differ, Vary {_vary(anonymous)}")
    return problems


def test_every_get_route_is_private_when_the_answer_depends_on_the_reader(site: Site) -> None:
    paths = _get_paths(site)
    assert len(paths) > 70
    problems: list[str] = []
    for path in paths:
        for headers in ({}, HTML) if not path.startswith("/api/") else ({},):
            problems += _check_path(site, path, headers)
    assert not problems, "\n".join(problems)


def test_the_probes_page_a_signed_in_readers_view_of_a_public_collection_is_private(site: Site) -> None:
    path = f"/collections/{site.values['tag_id']}"
    for how in ("cookie", "bearer"):
        page = _ask(site, path, HTML, site.bob, how)
        assert page.status_code == 200
        assert "Bob Viewer" in page.text or how == "bearer"
        assert "public" not in _cache(page), (how, _cache(page))
        assert "private" in _cache(page) or "no-store" in _cache(page)
    anonymous = _ask(site, path, HTML, None, "")
    assert _cache(anonymous).startswith("public"), _cache(anonymous)
    assert {"cookie", "authorization"} <= _vary(anonymous)  # a shared cache keeps readers' answers apart


def test_anonymous_reads_of_the_page_cache_stay_public_and_cached(site: Site) -> None:
    checked = 0
    for path in _get_paths(site):
        if policy_for(path) is None:
            continue
        for headers in ({}, HTML):
            first = _ask(site, path, headers, None, "")
            if first.status_code != 200:
                continue
            again = _ask(site, path, headers, None, "")
            assert _cache(again).startswith("public, max-age="), (path, _cache(again))
            assert again.headers.get("x-paperfeed-cache") in ("hit", "stale"), (path, dict(again.headers))
            checked += 1
    assert checked >= 15


def _other_methods(site: Site) -> list[tuple[str, str]]:
    found = []
    for route in site.routes:
        for method in sorted(getattr(route, "methods", None) or ()):
            if method not in ("GET", "HEAD"):
                found.append((method, site.fill(route.path)))
    return sorted(set(found))


@pytest.mark.parametrize("how", ["cookie", "bearer"])
def test_no_answer_to_a_state_changing_request_of_a_reader_is_public(site: Site, how: str) -> None:
    routes = _other_methods(site)
    assert len(routes) > 60
    problems = []
    for method, path in routes:
        if path in ("/signout", "/account/signout-everywhere", "/account/delete") or "tokens" in path:
            continue  # would end the session or token the rest of the walk uses
        headers = {"accept": "application/json" if path.startswith("/api/") else "text/html"}
        client = site.client
        client.cookies.clear()
        if how == "cookie":
            cookie, token = site.csrf(site.bob.session)
            client.cookies.set("pf_csrf", cookie)
            client.cookies.set("pf_session", site.bob.session)
            headers["x-csrf-token"] = token
        else:
            headers["authorization"] = f"Bearer {site.bob.token}"
        answer = client.request(method, path, headers=headers)
        client.cookies.clear()
        if "public" in _cache(answer):
            problems.append(f"{method} {path} ({how}): {answer.status_code} {_cache(answer)!r}")
    assert not problems, "\n".join(problems)


def test_mcp_answers_to_a_reader_are_private(site: Site) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "library_list", "arguments": {}},
    }
    client = site.client
    answer = client.post("/mcp", json=call, headers={**_MCP, "authorization": f"Bearer {site.ada.token}"})
    assert answer.status_code == 200, answer.text
    assert "Alpha" in answer.text or "2501.00101" in answer.text
    assert "public" not in _cache(answer)
    assert "private" in _cache(answer) or "no-store" in _cache(answer)
