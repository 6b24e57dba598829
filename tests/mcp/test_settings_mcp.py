"""The settings tools over MCP: compact results, and errors an agent can act on."""

from __future__ import annotations

from support.mcp_clients import data


async def test_an_agent_reads_and_changes_a_setting(connect) -> None:
    async with connect() as client:
        listed = data(await client.call_tool("list_settings", {}))
        changed = data(await client.call_tool("set_setting", {"key": "timezone", "value": "Asia/Tokyo"}))
        reset = data(await client.call_tool("reset_setting", {"key": "timezone"}))
    assert {"timezone", "assistant_name", "default_model", "journal"} <= {s["key"] for s in listed["items"]}
    assert changed["value"] == "Asia/Tokyo" and reset["value"] == "UTC"


async def test_an_unknown_key_or_a_bad_value_is_an_error_result_that_says_what_to_do(connect_fast) -> None:
    async with connect_fast() as client:
        unknown = await client.call_tool("set_setting", {"key": "tz", "value": "Asia/Tokyo"})
        bad = await client.call_tool("set_setting", {"key": "timezone", "value": "Asia/tokio"})
        after = data(await client.call_tool("get_setting", {"key": "timezone"}))
    assert unknown.is_error and "no setting named 'tz'" in unknown.content[0].text
    assert "The settings are: timezone" in unknown.content[0].text
    assert bad.is_error and "did you mean `Asia/Tokyo`?" in bad.content[0].text
    assert after["value"] == "UTC"
