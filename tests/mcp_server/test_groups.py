"""The reading-group tools over MCP's streamable HTTP: a member lists their groups, queues a paper with a
note and reads the queue; a reader who is not a member meets the same tool error as for an unknown group."""

from __future__ import annotations

from mcp import Client

from paperfeed.bootstrap import build_app
from tests.mcp_server.conftest import Instance
from tests.mcp_server.test_http import ids, run, text


def test_a_member_queues_a_paper_and_a_stranger_learns_nothing(http_url: str, instance: Instance) -> None:
    app = build_app(instance.settings)
    try:
        ada = app.readers.accounts.user_for_api_token(instance.token)
        assert ada is not None
        group = app.readers.groups.create(ada.id, "MCP club")
    finally:
        app.close()

    async def member(client: Client) -> None:
        listed = await client.call_tool("group_list", {})
        assert not listed.is_error, text(listed)
        assert listed.structured_content is not None
        assert {
            "id": group.id,
            "name": "MCP club",
            "role": "owner",
            "url": f"{http_url[:-4]}/groups/{group.id}",
        } in (listed.structured_content["groups"])
        added = await client.call_tool(
            "group_queue_add", {"group_id": group.id, "paper_id": "2503.00002v1", "note": "long documents"}
        )
        assert not added.is_error, text(added)
        assert added.structured_content == {
            "group_id": group.id,
            "paper_id": "2503.00002",
            "added_by": "Ada",
            "votes": 0,
        }
        queue = await client.call_tool("group_queue", {"group_id": group.id})
        assert not queue.is_error
        assert "2503.00002 — Sparse attention for long documents" in text(queue)
        assert "added by Ada: long documents" in text(queue)
        unknown = await client.call_tool("group_queue_add", {"group_id": group.id, "paper_id": "2501.99999"})
        assert unknown.is_error
        assert "2501.99999" in text(unknown)

    async def stranger(client: Client) -> None:
        for tool, arguments in (
            ("group_queue", {"group_id": group.id}),
            ("group_queue_add", {"group_id": group.id, "paper_id": "2503.00001"}),
        ):
            refused = await client.call_tool(tool, arguments)
            assert refused.is_error
            assert text(refused).endswith(f": no group {group.id}")
            free = await client.call_tool(tool, {**arguments, "group_id": group.id + 1000})
            assert text(free) == text(refused).replace(str(group.id), str(group.id + 1000))

    run(http_url, member, token=instance.token)
    run(http_url, stranger, token=instance.other_token)


def test_the_readers_mute_rules_hold_over_mcp(http_url: str, instance: Instance) -> None:
    """Bob mutes an author: his token's searches, feeds and trending leave her papers out and say so;
    Ada's (no rules) and anonymous calls are unchanged."""
    app = build_app(instance.settings)
    try:
        bob = app.readers.accounts.user_for_api_token(instance.other_token)
        assert bob is not None
        app.readers.mutes.add(bob.id, "author", "Grace Hopper")  # 2503.00002
    finally:
        app.close()

    async def muted(client: Client) -> None:
        found = await client.call_tool("search_papers", {"query": "sparse attention long documents"})
        assert "2503.00002" not in ids(found)
        assert "1 paper hidden by your mute rules" in text(found)
        day = await client.call_tool("daily_papers", {"date": "2025-03-10"})
        assert ids(day) == ["2503.00001"]
        assert "2503.00002" not in ids(await client.call_tool("trending", {}))

    async def unmuted(client: Client) -> None:
        assert "2503.00002" in ids(
            await client.call_tool("search_papers", {"query": "sparse attention long documents"})
        )
        assert "2503.00002" in ids(await client.call_tool("daily_papers", {"date": "2025-03-10"}))

    try:
        run(http_url, muted, token=instance.other_token)
        run(http_url, unmuted, token=instance.token)
        run(http_url, unmuted)
    finally:
        app = build_app(instance.settings)
        try:
            app.readers.mutes.remove(bob.id, "author", "Grace Hopper")
        finally:
            app.close()
