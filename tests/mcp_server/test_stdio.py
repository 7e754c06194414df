"""``paperfeed mcp``: the real CLI spawned as a subprocess (``python -m paperfeed mcp``), driven over stdio
by the SDK's client as a desktop assistant would; the reader comes from ``--token`` or PAPERFEED_MCP_TOKEN."""

from __future__ import annotations

import pytest
from mcp_types import TextContent

from tests.mcp_server.conftest import Instance, run_async, stdio_client

pytestmark = pytest.mark.slow  # each test spawns the CLI (imports the app: seconds)

HINT = "start the server with `paperfeed mcp --token TOKEN` (or set PAPERFEED_MCP_TOKEN)"


def _text(result: object) -> str:
    block = result.content[0]  # type: ignore[attr-defined]
    assert isinstance(block, TextContent)
    return block.text


def test_without_a_token_the_read_only_tools_answer_and_the_reader_tools_say_how(instance: Instance) -> None:
    async def main() -> None:
        async with stdio_client(instance) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"search_papers", "get_paper", "for_you", "subscribe_alert"} <= names
            found = await client.call_tool("search_papers", {"query": "sparse attention", "limit": 1})
            assert not found.is_error, _text(found)
            assert found.structured_content is not None
            assert [p["id"] for p in found.structured_content["papers"]] == ["2503.00002"]
            paper = await client.call_tool("get_paper", {"paper_id": "2503.00002"})
            assert _text(paper).startswith("# Sparse attention for long documents")
            day = await client.call_tool("daily_papers", {"date": "2025-03-11"})
            assert "2503.00003" in _text(day)
            bad = await client.call_tool("daily_papers", {"month": "2025-13"})
            assert bad.is_error
            assert "2025-13" in _text(bad)
            refused = await client.call_tool("library_list", {})
            assert refused.is_error
            assert "this tool needs a personal API token: create one at http://" in _text(refused)
            assert _text(refused).endswith(HINT)
            read = await client.read_resource("paper://2503.00001")
            assert getattr(read.contents[0], "text", "").startswith("# Diffusion transformers for graphs")

    run_async(main)


def test_the_token_flag_chooses_the_reader(instance: Instance) -> None:
    async def main() -> None:
        async with stdio_client(instance, "--token", instance.other_token) as client:
            saved = await client.call_tool("library_add", {"paper_id": "2503.00004", "tags": ["Bio"]})
            assert not saved.is_error, _text(saved)
            listed = await client.call_tool("library_list", {"tag": "Bio"})
            assert listed.structured_content is not None
            assert [p["id"] for p in listed.structured_content["papers"]] == ["2503.00004"]
            feed = await client.call_tool("for_you", {"limit": 3})
            assert not feed.is_error
            assert "why: " in _text(feed)

    run_async(main)


def test_a_revoked_token_from_the_environment_is_a_tool_error(instance: Instance) -> None:
    async def main() -> None:
        async with stdio_client(instance, token="pf_revoked-or-never-issued") as client:
            refused = await client.call_tool("for_you", {})
            assert refused.is_error
            assert "the personal API token is invalid or has been revoked" in _text(refused)
            assert _text(refused).endswith(HINT)

    run_async(main)
