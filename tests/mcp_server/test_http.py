"""The web app's MCP endpoint (``/mcp``, streamable HTTP) driven by the SDK's own client against a real
uvicorn on loopback: every tool, bad arguments, tokens, unknown ids, paper resources, a private instance."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from mcp import Client, MCPError
from mcp_types import CallToolResult, TextContent

from tests.mcp_server.conftest import Instance, http_client, run_async

READ_ONLY = {"search_papers", "search_evidence", "get_paper", "daily_papers", "trending", "similar_papers"}
READER = {
    "for_you",
    "library_list",
    "library_add",
    "library_tag",
    "subscribe_alert",
    "group_list",
    "group_queue",
    "group_queue_add",
    "library_search",
}
READER_ARGS: dict[str, dict[str, Any]] = {
    "for_you": {},
    "library_list": {},
    "library_add": {"paper_id": "2503.00004"},
    "library_tag": {"paper_id": "2503.00004", "tags": ["x"]},
    "subscribe_alert": {"name": "never", "query": "protein"},
    "group_list": {},
    "library_search": {"query": "graphs"},
    "group_queue": {"group_id": 1},
    "group_queue_add": {"group_id": 1, "paper_id": "2503.00004"},
}


def run(url: str, body: Callable[[Client], Awaitable[None]], token: str | None = None) -> None:
    async def main() -> None:
        async with http_client(url, token) as client:
            await body(client)

    run_async(main)


def text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def ids(result: CallToolResult) -> list[str]:
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    return [p["id"] for p in result.structured_content["papers"]]


def test_every_tool_is_listed_with_a_typed_schema_and_a_description(http_url: str) -> None:
    async def body(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == READ_ONLY | READER
        for tool in tools.values():
            assert len(tool.description or "") > 40, tool.name
            assert tool.input_schema["type"] == "object"
            assert tool.output_schema is not None, tool.name
        search = tools["search_papers"].input_schema
        assert search["required"] == ["query"]
        assert search["properties"]["limit"]["maximum"] == 50
        assert "author:" in search["properties"]["query"]["description"]
        assert tools["get_paper"].annotations is not None
        assert tools["get_paper"].annotations.read_only_hint
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["paper://{+paper_id}"]

    run(http_url, body)


def test_search_papers_uses_the_query_syntax_filters_and_limit(http_url: str) -> None:
    async def body(client: Client) -> None:
        found = await client.call_tool("search_papers", {"query": "diffusion graphs", "limit": 2})
        assert len(ids(found)) == 2
        assert found.structured_content is not None
        assert found.structured_content["total"] >= 2
        first = found.structured_content["papers"][0]
        assert first["url"].endswith(f"/papers/{first['id']}")
        assert first["published"]
        assert f"1. {first['id']} — " in text(found)
        hopper = await client.call_tool("search_papers", {"query": 'author:"Grace Hopper" attention'})
        assert ids(hopper) == ["2503.00002"]
        old = await client.call_tool("search_papers", {"query": "string theory", "date_to": "2000-01-01"})
        assert ids(old) == ["hep-th/9901001"]
        none = await client.call_tool("search_papers", {"query": "diffusion", "categories": ["q-bio.BM"]})
        assert ids(none) == []
        assert "(no papers)" in text(none)
        code = await client.call_tool("search_papers", {"query": "diffusion", "has_code": True})
        assert ids(code) == ["2503.00001"]
        backwards = await client.call_tool(
            "search_papers", {"query": "x", "date_from": "2025-01-02", "date_to": "2024-01-01"}
        )
        assert backwards.is_error
        assert "date_from (2025-01-02) is after date_to (2024-01-01)" in text(backwards)

    run(http_url, body)


def test_get_paper_is_the_papers_markdown_page(http_url: str) -> None:
    site = http_url.removesuffix("/mcp")

    async def body(client: Client) -> None:
        got = await client.call_tool("get_paper", {"paper_id": "arXiv:2503.00001"})
        assert not got.is_error, text(got)
        served = httpx.get(f"{site}/papers/2503.00001.md", timeout=30)
        assert served.status_code == 200
        assert text(got) == served.text  # one renderer: the .md page's references will show here too
        assert got.structured_content is not None
        assert got.structured_content["code"] == "https://github.com/example/dtg"
        assert got.structured_content["listed_on"] == ["2025-03-10"]
        old = await client.call_tool("get_paper", {"paper_id": "hep-th/9901001"})
        assert text(old).startswith("# An old-style string theory paper")

    run(http_url, body)


def test_unknown_and_malformed_ids_are_tool_errors_that_say_what_to_do(http_url: str) -> None:
    async def body(client: Client) -> None:
        for tool in ("get_paper", "similar_papers"):
            unknown = await client.call_tool(tool, {"paper_id": "2501.99999v3"})
            assert unknown.is_error
            assert "paper 2501.99999 is not in this paperfeed instance" in text(unknown)
            assert "search_papers" in text(unknown)
            bad = await client.call_tool(tool, {"paper_id": "not a paper id"})
            assert bad.is_error
            assert "paper ids look like 2503.10613" in text(bad)
            assert "Traceback" not in text(bad)

    run(http_url, body)


def test_daily_papers_by_day_week_and_month(http_url: str) -> None:
    async def body(client: Client) -> None:
        day = await client.call_tool("daily_papers", {"date": "2025-03-10"})
        assert ids(day) == ["2503.00002", "2503.00001"]  # most upvoted first
        assert day.structured_content is not None
        assert day.structured_content["period"] == "2025-03-10"
        week = await client.call_tool("daily_papers", {"week": "2025-W11", "limit": 2})
        assert ids(week) == ["2503.00002", "2503.00001"]
        assert "1 more: call again with offset." in text(week)
        rest = await client.call_tool("daily_papers", {"week": "2025-W11", "limit": 2, "offset": 2})
        assert ids(rest) == ["2503.00003"]
        assert text(rest).splitlines()[1].startswith("3. 2503.00003")
        month = await client.call_tool("daily_papers", {"month": "2025-03", "sort": "trending"})
        assert sorted(ids(month)) == ["2503.00001", "2503.00002", "2503.00003"]
        latest = await client.call_tool("daily_papers", {})
        assert ids(latest) == ["2503.00003"]  # the newest day with papers
        empty = await client.call_tool("daily_papers", {"date": "2024-01-01"})
        assert ids(empty) == []

    run(http_url, body)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"date": "2025-13-10"}, "month must be in 1..12"),
        ({"date": "yesterday"}, "yesterday"),
        ({"week": "2025-W60"}, "2025 has no ISO week 60"),
        ({"month": "1800-01"}, "1800"),
        ({"date": "2025-03-10", "week": "2025-W11"}, "give only one of date, week and month"),
        ({"sort": "random"}, "sort"),
        ({"limit": 0}, "limit"),
    ],
)
def test_bad_periods_are_tool_errors(http_url: str, arguments: dict[str, Any], message: str) -> None:
    async def body(client: Client) -> None:
        result = await client.call_tool("daily_papers", arguments)
        assert result.is_error, arguments
        assert message in text(result)

    run(http_url, body)


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("search_papers", {"query": "x", "limit": 500}, "limit"),
        ("search_papers", {"query": "x", "limit": "many"}, "limit"),
        ("search_papers", {}, "query"),
        ("search_papers", {"query": "x" * 251}, "query"),
        ("search_papers", {"query": "x", "date_from": "2025-02-30"}, "date_from"),
        ("trending", {"offset": -1}, "offset"),
        ("similar_papers", {"paper_id": "2503.00001", "limit": 51}, "limit"),
        ("get_paper", {}, "paper_id"),
    ],
)
def test_bad_arguments_are_tool_errors_naming_the_argument(
    http_url: str, tool: str, arguments: dict[str, Any], field: str
) -> None:
    async def body(client: Client) -> None:
        result = await client.call_tool(tool, arguments)
        assert result.is_error, (tool, arguments)
        assert field in text(result)
        assert "Traceback" not in text(result)

    run(http_url, body)


def test_trending_and_similar_papers(http_url: str) -> None:
    async def body(client: Client) -> None:
        hot = await client.call_tool("trending", {"limit": 3})
        assert ids(hot)[0] == "2503.00002"  # the most upvoted, listed recently
        assert hot.structured_content is not None
        assert all(p["score"] > 0 for p in hot.structured_content["papers"])
        assert "score = " in text(hot)
        similar = await client.call_tool("similar_papers", {"paper_id": "2503.00001v1", "limit": 3})
        found = ids(similar)
        assert found
        assert "2503.00001" not in found
        assert len(found) <= 3
        assert similar.structured_content is not None
        assert all(p.get("similarity") is not None for p in similar.structured_content["papers"])
        assert all(p.get("reason") is None for p in similar.structured_content["papers"])  # no citations
        # a paper with citations: the paper linked to it in the graph comes first and says why
        linked = await client.call_tool("similar_papers", {"paper_id": "2503.00002", "limit": 3})
        assert ids(linked)[0] == "2503.00004"
        assert linked.structured_content is not None
        listed = linked.structured_content["papers"]
        assert listed[0]["reason"] == "cited together with it by 2 papers"
        assert all(p.get("reason") is None for p in listed[1:])
        assert "   why: cited together with it by 2 papers" in text(linked)

    run(http_url, body)


@pytest.mark.parametrize("tool", sorted(READER))
def test_reader_tools_need_a_token(http_url: str, tool: str) -> None:
    site = http_url.removesuffix("/mcp")

    async def body(client: Client) -> None:
        result = await client.call_tool(tool, READER_ARGS[tool])
        assert result.is_error
        assert text(result).endswith(
            f"this tool needs a personal API token: create one at {site}/account (API tokens) and send it "
            "as the header `Authorization: Bearer TOKEN`"
        )

    run(http_url, body)


def test_an_invalid_token_is_a_401_before_any_tool_runs(http_url: str) -> None:
    """The MCP authorization spec: an invalid or expired token gets HTTP 401 (as on every route of the
    site), not an answer; the SDK's client then fails to connect instead of reading as nobody."""
    trending = {"name": "trending", "arguments": {}}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": trending}
    for token in ("pf_not-a-real-token", "not-even-ours"):
        refused = httpx.post(
            http_url,
            json=call,
            headers={**_POST, "authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert refused.status_code == 401
        assert refused.json()["error"] == "The API token is invalid or has been revoked."
        assert refused.headers["www-authenticate"] == 'Bearer error="invalid_token"'

    async def body(client: Client) -> None:
        await client.list_tools()

    with pytest.raises(BaseExceptionGroup) as caught:
        run(http_url, body, token="pf_not-a-real-token")
    assert caught.group_contains(MCPError)


_POST = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.mark.parametrize("which", ["open", "private"])
def test_a_get_opens_no_event_stream_it_is_a_405_at_once(
    http_url: str, private_url: str, instance: Instance, which: str
) -> None:
    """docs/mcp.md: no server-sent event streams. The SDK would keep a GET open (30 of 30 stayed open in
    the probe, anonymous and with PAPERFEED_MCP_REQUIRE_TOKEN alike); each is answered and closed."""
    url = http_url if which == "open" else private_url

    credentials: list[dict[str, str]] = [{}] * 29 + [{"authorization": f"Bearer {instance.token}"}]

    async def main() -> None:
        async with httpx.AsyncClient(timeout=5) as client:
            answers = await asyncio.gather(
                *(client.get(url, headers={"accept": "text/event-stream", **auth}) for auth in credentials)
            )
            deleted = await client.delete(url)
        for answer in [*answers, deleted]:
            assert answer.status_code == 405, answer.text
            assert answer.headers["allow"] == "POST"
            assert "send each JSON-RPC message to /mcp with POST" in answer.json()["error"]

    run_async(main)  # a GET held open would fail on the client's 5 s read timeout

    async def still_works(client: Client) -> None:
        assert len((await client.list_tools()).tools) == len(
            READ_ONLY | READER
        )  # every tool, as before the GET

    run(url, still_works, token=instance.token)


def test_library_tools_act_for_the_tokens_reader_only(http_url: str, instance: Instance) -> None:
    async def ada(client: Client) -> None:
        added = await client.call_tool("library_add", {"paper_id": "2503.00003v2", "tags": ["Graphs"]})
        assert not added.is_error, text(added)
        assert added.structured_content == {
            "paper_id": "2503.00003",
            "saved": True,
            "tags": ["Graphs"],
            "read": False,
            "dismissed": False,
        }
        listed = await client.call_tool("library_list", {"tag": "graphs"})
        assert ids(listed) == ["2503.00003"]
        assert "tags: Graphs" in text(listed)
        retagged = await client.call_tool(
            "library_tag", {"paper_id": "2503.00003", "tags": ["Reading", "Later"]}
        )
        assert retagged.structured_content is not None
        assert sorted(retagged.structured_content["tags"]) == ["Later", "Reading"]
        assert ids(await client.call_tool("library_list", {"tag": "Later"})) == ["2503.00003"]
        missing = await client.call_tool("library_list", {"tag": "nope"})
        assert missing.is_error
        assert "you have no tag named 'nope' (your tags:" in text(missing)
        unknown = await client.call_tool("library_add", {"paper_id": "2501.99999"})
        assert unknown.is_error
        assert "no paper with id 2501.99999 is in this instance" in text(unknown)
        long_tag = await client.call_tool("library_add", {"paper_id": "2503.00003", "tags": ["t" * 61]})
        assert long_tag.is_error
        assert "tag: a tag name has at most 60 characters" in text(long_tag)
        removed = await client.call_tool("library_tag", {"paper_id": "2503.00003", "tags": []})
        assert removed.structured_content is not None
        assert removed.structured_content["saved"] is False
        assert "not in your library" in text(removed)
        assert "2503.00003" not in ids(await client.call_tool("library_list", {}))
        await client.call_tool("library_add", {"paper_id": "2503.00001"})
        mine = await client.call_tool("for_you", {"limit": 5})
        assert not mine.is_error
        assert "2503.00001" not in ids(mine)
        assert mine.structured_content is not None
        assert mine.structured_content["mode"] in {
            "similarity",
            "model",
        }
        assert all(p["reason"] for p in mine.structured_content["papers"])

    async def bob(client: Client) -> None:
        assert ids(await client.call_tool("library_list", {})) == []  # Ada's saves are hers

    run(http_url, ada, token=instance.token)
    run(http_url, bob, token=instance.other_token)


def test_subscribe_alert_saves_a_search_with_its_private_feed(http_url: str, instance: Instance) -> None:
    async def body(client: Client) -> None:
        made = await client.call_tool(
            "subscribe_alert",
            {
                "name": "Graph diffusion",
                "query": "graph diffusion",
                "categories": ["cs.LG"],
                "has_code": True,
            },
        )
        assert not made.is_error, text(made)
        alert = made.structured_content
        assert alert is not None
        assert alert["query"] == "graph diffusion"
        assert alert["filters"] == {"categories": ["cs.LG"], "has_code": True}
        feed = httpx.get(alert["rss"], timeout=30)
        assert feed.status_code == 200
        assert "Diffusion transformers for graphs" in feed.text
        again = await client.call_tool("subscribe_alert", {"name": "graph diffusion", "query": "other"})
        assert again.is_error
        assert "name: you already have a saved search named" in text(again)
        bad = await client.call_tool(
            "subscribe_alert", {"name": "x", "query": "y", "date_from": "2025-99-01"}
        )
        assert bad.is_error
        assert "date_from" in text(bad)

    run(http_url, body, token=instance.token)


def test_papers_are_resources_in_markdown(http_url: str) -> None:
    async def body(client: Client) -> None:
        read = await client.read_resource("paper://2503.00002")
        content = read.contents[0]
        assert content.mime_type == "text/markdown"
        assert getattr(content, "text", "").startswith("# Sparse attention for long documents")
        got = await client.call_tool("get_paper", {"paper_id": "2503.00002"})
        assert getattr(content, "text", "") == text(got)
        old = await client.read_resource("paper://hep-th/9901001")
        assert getattr(old.contents[0], "text", "").startswith("# An old-style string theory paper")
        with pytest.raises(MCPError, match=r"paper 2501\.99999 is not in this paperfeed instance"):
            await client.read_resource("paper://2501.99999")
        with pytest.raises(MCPError, match="paper ids look like"):
            await client.read_resource("paper://nonsense")

    run(http_url, body)


def test_a_private_instance_answers_only_with_a_token(private_url: str, instance: Instance) -> None:
    site = private_url.removesuffix("/mcp")

    async def anonymous(client: Client) -> None:
        for tool, arguments in (("search_papers", {"query": "diffusion"}), ("trending", {})):
            refused = await client.call_tool(tool, arguments)
            assert refused.is_error
            assert (
                "this paperfeed instance answers only requests with a personal API token: create one at "
                f"{site}/account" in text(refused)
            )
        with pytest.raises(MCPError, match="only requests with a personal API token"):
            await client.read_resource("paper://2503.00002")
        assert len((await client.list_tools()).tools) == len(
            READ_ONLY | READER
        )  # what it offers is no secret

    async def signed(client: Client) -> None:
        assert ids(await client.call_tool("daily_papers", {"date": "2025-03-10"})) == [
            "2503.00002",
            "2503.00001",
        ]
        read = await client.read_resource("paper://2503.00002")
        assert getattr(read.contents[0], "text", "").startswith("# Sparse attention")

    run(private_url, anonymous)
    run(private_url, signed, token=instance.token)
