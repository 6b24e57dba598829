"""The journal over MCP, as a client's model uses it: open today, prepare it, read the opener;
a bad schedule is a tool error that changes nothing."""

from __future__ import annotations

from support.mcp_clients import data

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def test_an_agent_opens_and_prepares_today_and_reads_the_opener(
        connect_fast, fable: Fable, alice: Caller) -> None:
    await fable.call("create_note", {"title": "Call the plumber", "status": "todo", "due_date": "2020-01-01"}, alice)
    async with connect_fast() as client:
        opened = data(await client.call_tool("open_journal", {}))
        assert set(opened) == {"day", "conversation_id", "prep"} and opened["prep"] == "none"
        prepared = data(await client.call_tool("prepare_journal", {}))
        assert "**Overdue**\n- Call the plumber (due 2020-01-01)" in prepared["opener"]
        listed = data(await client.call_tool("list_journal_days", {}))
        assert listed["items"] == [{"day": opened["day"], "conversation_id": opened["conversation_id"], "prep": "done"}]


async def test_a_bad_schedule_or_day_is_a_clear_tool_error_and_changes_nothing(connect_fast, fable: Fable) -> None:
    async with connect_fast() as client:
        for name, arguments, said in [
            ("set_setting", {"key": "journal", "value": {"prep_time": "25:00"}}, "hour value is outside"),
            ("set_setting", {"key": "journal", "value": {"timezone": "Mars/Olympus"}}, "not a known time zone"),
            ("open_journal", {"day": "3000-01-01"}, "is after today"),
            ("list_journal_days", {"start": "2025-01-01", "end": "2025-12-31"}, "at most 92 days"),
        ]:
            refused = await client.call_tool(name, arguments)
            assert refused.is_error and said in refused.content[0].text, (name, refused.content[0].text)
        assert data(await client.call_tool("get_setting", {"key": "journal"}))["value"]["prep_time"] == "06:00:00"
        assert data(await client.call_tool("list_journal_days", {})) == {"items": []}
