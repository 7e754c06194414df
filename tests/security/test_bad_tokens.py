"""An invalid or revoked Bearer token is a 401 on every route of the app — public reads included, whether
the page cache holds their answer or not, static files, the docs and ``/mcp`` too — never a silent
anonymous answer."""

from __future__ import annotations

from typing import Any

from .conftest import Site

_MCP = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _every_request(site: Site) -> list[tuple[str, str]]:
    found = {("GET", "/static/app.css"), ("GET", "/no/such/page"), ("POST", "/mcp"), ("GET", "/mcp")}
    for route in site.routes:
        for method in getattr(route, "methods", None) or ():
            if method != "HEAD":
                found.add((method, site.fill(route.path)))
    return sorted(found)


def _refused(answer: Any) -> str | None:
    if answer.status_code != 401:
        return f"{answer.status_code} {answer.text[:120]!r}"
    if 'error="invalid_token"' not in answer.headers.get("www-authenticate", ""):
        return f"401 without WWW-Authenticate invalid_token: {dict(answer.headers)}"
    return None


def test_an_invalid_or_revoked_token_is_a_401_on_every_route_cached_or_not(site: Site) -> None:
    revoked = site.app.readers.accounts.create_api_token(site.bob.user, "to revoke")
    site.app.readers.accounts.revoke_api_token(site.bob.user, revoked[0].id)
    requests = _every_request(site)
    assert len(requests) > 150
    client = site.client
    problems = []
    for method, path in requests:
        if method == "GET" and path != "/mcp":
            for _ in range(2):  # the second anonymous read is answered by the page cache where it keeps one
                client.get(path)
        for token in ("pf_never-issued", revoked[1], "not-even-our-prefix", ""):
            headers = {"authorization": f"Bearer {token}", **(_MCP if path == "/mcp" else {})}
            answer = client.request(method, path, headers=headers)
            problem = _refused(answer)
            if problem:
                problems.append(f"{method} {path} with {token or 'an empty token'!r}: {problem}")
    assert not problems, "\n".join(problems)


def test_the_401_says_why_as_json_or_on_a_page_for_a_browser(site: Site) -> None:
    api = site.client.get("/api/papers", headers={"authorization": "Bearer pf_gone"})
    assert api.status_code == 401
    assert api.json()["error"] == "The API token is invalid or has been revoked."
    assert "no-store" in api.headers["cache-control"]
    page = site.client.get("/", headers={"authorization": "Bearer pf_gone", "accept": "text/html"})
    assert page.status_code == 401


def test_a_valid_token_still_reads_the_cached_anonymous_answer(site: Site) -> None:
    site.client.get("/api/papers")
    again = site.client.get("/api/papers", headers={"authorization": f"Bearer {site.bob.token}"})
    assert again.status_code == 200
    assert again.headers.get("x-paperfeed-cache") in ("hit", "stale")
    assert again.headers["cache-control"].startswith("public")
