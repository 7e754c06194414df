"""Anonymous searches are limited per client address (#31, finding 9; PAPERFEED_SEARCH_RATE_PER_MINUTE).

A search that misses the page cache embeds the query and reads both indexes; one client asking thousands
of distinct queries a minute would take a public instance's CPU. Each anonymous address gets the setting's
searches a minute (as many at once), then a 429 with Retry-After on every search surface — the page, the
API, the exports, the feeds and MCP's search_papers without a token; cached answers, signed-in readers and
requests without a query are not counted. Real app, real SQLite, the official MCP client over HTTP.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from mcp_types import TextContent

from paperfeed.bootstrap import build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.wording import count
from paperfeed.services.rate_limits import ClientRateLimiter
from paperfeed.settings import Settings
from paperfeed.web import create_app
from paperfeed.web.public_cache import policy_for
from tests.library.conftest import PAPERS, add_user
from tests.mcp_server.conftest import http_client, run_async
from tests.support.live_server import live_server

SURFACES = [
    ("/search?q=diffusion-{n}", {"accept": "text/html"}),
    ("/api/papers/search?q=diffusion-{n}", {}),
    ("/search/export?q=diffusion-{n}", {}),
    ("/api/papers/search/export?q=diffusion-{n}", {}),
    ("/rss/search?q=diffusion-{n}", {}),
    ("/atom/search?q=diffusion-{n}", {}),
]


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    settings = Settings(
        data_dir=Path(tmp_path_factory.mktemp("limit")) / "data",
        database_url=None,
        embedding_backend="fake",
        search_rate_per_minute=3,
    )
    app = build_app(settings)
    try:
        app.core.store.apply_batch(Batch(papers=list(PAPERS)))
    finally:
        app.close()
    return settings


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(lambda: build_app(settings))) as c:
        yield c


@pytest.mark.parametrize(("path", "headers"), SURFACES, ids=[p.split("?")[0] for p, _ in SURFACES])
def test_an_anonymous_client_gets_its_searches_then_a_429(
    client: TestClient, path: str, headers: dict[str, str]
) -> None:
    for n in range(3):  # distinct queries: none is answered by the page cache
        assert client.get(path.format(n=n), headers=headers).status_code == 200
    refused = client.get(path.format(n=99), headers=headers)
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["retry-after"]) <= 20
    assert "Too many searches from your address" in refused.text
    if policy_for(path.split("?")[0]) is not None:  # asked before: the page cache answers, not counted
        assert client.get(path.format(n=0), headers=headers).status_code == 200


def test_readers_and_empty_searches_are_not_counted(settings: Settings, client: TestClient) -> None:
    app = build_app(settings)
    try:
        user = app.readers.accounts.user_by_id(add_user(app, "ada@example.org", "Ada"))
        assert user is not None
        token = app.readers.accounts.create_api_token(user, "t")[1]
    finally:
        app.close()
    for _ in range(10):
        assert client.get("/search", headers={"accept": "text/html"}).status_code == 200
    for n in range(10):
        got = client.get(f"/api/papers/search?q=reader-{n}", headers={"authorization": f"Bearer {token}"})
        assert got.status_code == 200


def test_mcp_search_papers_without_a_token_is_limited_too(settings: Settings) -> None:
    with live_server(settings) as url:
        texts: list[tuple[bool, str]] = []
        structured: list[dict[str, object] | None] = []

        async def main() -> None:
            async with http_client(f"{url}/mcp") as client:
                for n in range(4):
                    got = await client.call_tool("search_papers", {"query": f"graph {n}"})
                    block = got.content[0]
                    assert isinstance(block, TextContent)
                    texts.append((bool(got.is_error), block.text))
                    structured.append(got.structured_content)

        run_async(main)
    assert [error for error, _ in texts] == [False, False, False, True]
    assert "too many searches from your address: try again in" in texts[-1][1]
    refusal = structured[-1]  # a refusal a client can act on, told apart from other tool errors
    assert refusal is not None
    error = refusal["error"]
    assert isinstance(error, dict)
    # 3 a minute: the next search in 20 s less the time the three searches took (whole seconds, rounded up)
    wait = error["retry_after"]
    assert isinstance(wait, int)
    assert 1 <= wait <= 20
    assert error == {"code": "rate_limited", "message": texts[-1][1], "retry_after": wait}
    assert f"try again in {count(wait, 'second')}" in texts[-1][1]


def test_the_bucket_refills_at_the_set_rate() -> None:
    now = [0.0]
    limiter = ClientRateLimiter(60, clock=lambda: now[0])
    assert all(limiter.wait("a") == 0 for _ in range(60))  # a minute's worth at once
    assert limiter.wait("a") == pytest.approx(1.0)  # then one a second
    assert limiter.wait("b") == 0  # another address has its own
    now[0] += 1.0
    assert limiter.wait("a") == 0
    assert ClientRateLimiter(0).wait("a") == 0  # off
