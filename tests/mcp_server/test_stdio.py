"""``paperfeed mcp``: the real CLI spawned as a subprocess (``python -m paperfeed mcp``), driven over stdio
by the SDK's client as a desktop assistant would; the reader comes from ``--token`` or PAPERFEED_MCP_TOKEN."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_types import TextContent

from paperfeed.bootstrap import build_app
from paperfeed.domain.ingest import Batch
from tests.library.conftest import add_user
from tests.mcp_server.conftest import LISTINGS, PAPERS, Instance, run_async, settings_for, stdio_client

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


def test_the_counts_a_tool_shows_are_the_pages_ones_counted_once(tmp_path: Path) -> None:
    """Every surface reads papers through the one visible-papers lookup (issue #32): a paper's upvotes
    are Hugging Face's plus this instance's votes, in ``get_paper`` (which added the local votes a
    second time to a paper the feed lookup had already counted them in), ``search_papers`` and
    ``similar_papers`` alike, as on the paper page."""
    settings = settings_for(tmp_path / "data")
    app = build_app(settings)
    try:
        store = app.core.store
        app.indexes.keyword.on_papers_changed(store.apply_batch(Batch(papers=PAPERS, listings=LISTINGS)))
        app.indexes.keyword.flush()
        app.indexes.indexer.current().run()
        for email, name in (("ada@example.org", "Ada"), ("bob@example.org", "Bob")):
            user = app.readers.accounts.user_by_id(add_user(app, email, name))
            assert user is not None
            app.readers.community.upvote(user, "2503.00001")  # imported: 12
        shown = app.catalogue.feeds.paper("2503.00001")
        assert shown is not None
        assert shown.paper.upvotes == 14
    finally:
        app.close()

    async def main() -> None:
        async with stdio_client(Instance(settings, "", "")) as client:
            got = await client.call_tool("get_paper", {"paper_id": "2503.00001"})
            assert got.structured_content is not None, _text(got)
            assert got.structured_content["upvotes"] == 14
            found = await client.call_tool("search_papers", {"query": "diffusion transformers", "limit": 5})
            assert found.structured_content is not None
            votes = {p["id"]: p.get("upvotes") for p in found.structured_content["papers"]}
            assert votes["2503.00001"] == 14
            similar = await client.call_tool("similar_papers", {"paper_id": "2503.00003", "limit": 5})
            assert similar.structured_content is not None
            votes = {p["id"]: p.get("upvotes") for p in similar.structured_content["papers"]}
            assert votes.get("2503.00001") == 14

    run_async(main)
