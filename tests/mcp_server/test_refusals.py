"""MCP arguments and refusals (issue #41, finding 5), with the SDK's own client against a real uvicorn.

* ``group_queue`` with ``group_id`` 2**63 raised an unhandled overflow (a traceback in the log, "Error
  executing tool" to the client) where the API answers 400: every integer argument of every tool now has
  both bounds in its schema, so the SDK refuses such a value as an argument error naming it.
* Too many searches came back as a tool error like any other; now a refusal a client can act on carries
  ``structuredContent.error`` with ``code: "rate_limited"`` and ``retry_after`` (docs/mcp.md, "Errors"),
  and other tool errors carry none.
"""

from __future__ import annotations

from typing import Any

from mcp import Client

from paperfeed.bootstrap import build_app
from paperfeed.domain.ids import MAX_ROW_ID
from tests.mcp_server.conftest import Instance
from tests.mcp_server.test_http import run, text
from tests.support.live_server import live_server


def _integers(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The integer properties of a tool's input schema (a nullable one too), with their own schema."""
    found = []
    for name, prop in schema.get("properties", {}).items():
        for option in prop.get("anyOf", [prop]):
            if option.get("type") == "integer":
                found.append((name, option))
    return found


def test_every_integer_argument_of_every_tool_has_both_bounds(http_url: str) -> None:
    async def body(client: Client) -> None:
        tools = (await client.list_tools()).tools
        checked = 0
        for tool in tools:
            for name, prop in _integers(tool.input_schema):
                assert "minimum" in prop or "exclusiveMinimum" in prop, (tool.name, name)
                assert "maximum" in prop or "exclusiveMaximum" in prop, (tool.name, name)
                checked += 1
        assert checked >= 10  # limit and offset of the lists, group_id of the group tools

    run(http_url, body)


def test_a_group_id_past_the_stores_ids_is_an_argument_error(http_url: str, instance: Instance) -> None:
    async def body(client: Client) -> None:
        for value in (2**63, MAX_ROW_ID + 1):
            for tool, extra in (("group_queue", {}), ("group_queue_add", {"paper_id": "2503.00001"})):
                refused = await client.call_tool(tool, {"group_id": value, **extra})
                assert refused.is_error
                assert "group_id" in text(refused)
                assert f"less than or equal to {MAX_ROW_ID}" in text(refused)  # the SDK's argument error
        largest = await client.call_tool("group_queue", {"group_id": MAX_ROW_ID})
        assert largest.is_error  # a valid id of no group: the usual unknown-group answer
        assert text(largest).endswith(f": no group {MAX_ROW_ID}")

    run(http_url, body, token=instance.token)


def test_too_many_library_searches_are_a_rate_limited_refusal(instance: Instance) -> None:
    settings = instance.settings.model_copy(update={"library_search_rate_per_minute": 2})
    app = build_app(settings)
    try:
        ada = app.readers.accounts.user_for_api_token(instance.token)
        assert ada is not None
        app.readers.library.save(ada.id, "2503.00001")
    finally:
        app.close()
    results = []

    async def body(client: Client) -> None:
        for n in range(3):
            results.append(await client.call_tool("library_search", {"query": f"graphs {n}"}))
        results.append(await client.call_tool("library_search", {"query": "x" * 251}))  # another error

    with live_server(settings) as url:
        run(f"{url}/mcp", body, token=instance.token)
    first, second, limited, invalid = results
    assert not first.is_error
    assert not second.is_error
    assert limited.is_error
    assert limited.structured_content is not None
    error = limited.structured_content["error"]
    assert error["code"] == "rate_limited"
    assert isinstance(error["retry_after"], int)
    assert error["retry_after"] >= 1
    assert error["message"] == text(limited)
    assert "too many searches of your library" in text(limited)
    assert invalid.is_error
    assert not (invalid.structured_content or {}).get("error")  # not a refusal to wait out
