"""Saving a paper an administrator hid answers exactly as saving one this instance never had (#31, finding
9): MCP ``library_add`` said "Saved" for a hidden paper and "not in this instance" for an unknown one, so
any reader could list what moderation hid. Checked with the official MCP client over streamable HTTP (a
real uvicorn) and through the JSON API."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from mcp import Client
from mcp_types import TextContent

from paperfeed.bootstrap import build_app
from paperfeed.domain.ingest import Batch
from paperfeed.settings import Settings
from tests.library.conftest import PAPERS, add_user
from tests.mcp_server.conftest import http_client, run_async
from tests.support.live_server import live_server

HIDDEN, UNKNOWN = PAPERS[1].id, "2411.99999"


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, str]:
    settings = Settings(
        data_dir=Path(tmp_path_factory.mktemp("hidden")) / "data", database_url=None, embedding_backend="fake"
    )
    app = build_app(settings)
    try:
        app.core.store.apply_batch(Batch(papers=list(PAPERS)))
        user = app.readers.accounts.user_by_id(add_user(app, "ada@example.org", "Ada"))
        assert user is not None
        token = app.readers.accounts.create_api_token(user, "t")[1]
        app.readers.accounts.hide_paper(HIDDEN)
    finally:
        app.close()
    return settings, token


def _same(hidden: str, unknown: str) -> None:
    assert hidden.replace(HIDDEN, "ID") == unknown.replace(UNKNOWN, "ID"), (hidden, unknown)


def test_mcp_library_add_and_tag_of_a_hidden_paper_answer_like_an_unknown_one(
    instance: tuple[Settings, str],
) -> None:
    settings, token = instance
    with live_server(settings) as url:

        async def main() -> None:
            async with http_client(f"{url}/mcp", token) as client:
                await check(client)

        async def check(client: Client) -> None:
            for tool, extra in (("library_add", {}), ("library_tag", {"tags": ["x"]})):
                answers = []
                for paper_id in (HIDDEN, UNKNOWN):
                    got = await client.call_tool(tool, {"paper_id": paper_id, **extra})
                    assert got.is_error, (tool, paper_id)
                    block = got.content[0]
                    assert isinstance(block, TextContent)
                    answers.append(block.text)
                _same(*answers)
                assert (
                    "is not in this paperfeed instance" in answers[1] or "is in this instance" in answers[1]
                )

        run_async(main)
        auth = {"authorization": f"Bearer {token}"}
        answers = [
            httpx.post(f"{url}/api/me/saves", json={"paper_id": pid}, headers=auth, timeout=30)
            for pid in (HIDDEN, UNKNOWN)
        ]
        assert [a.status_code for a in answers] == [404, 404]
        _same(answers[0].json()["error"], answers[1].json()["error"])
