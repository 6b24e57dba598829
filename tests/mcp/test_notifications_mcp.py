"""The inbox over MCP, as a client's model reads it: compact results, errors as tool errors."""

from __future__ import annotations

from support.mcp_clients import data

from fable_core.people.notifications.notify import add_notifications
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def test_an_agent_reads_and_marks_its_inbox(connect_fast, fable: Fable, alice: Caller) -> None:
    async with fable.db.transaction() as session:
        await add_notifications(session, [alice.user_id], "due", "Due today: Call the dentist", data={"note_id": 9})
    async with connect_fast() as client:
        page = data(await client.call_tool("list_notifications", {}))
        [item] = page["items"]
        assert page["unread"] == 1 and set(item) == {"id", "kind", "title", "data", "created_at", "read"}
        assert data(await client.call_tool("mark_notifications_read", {"ids": [item["id"]]})) == {
            "marked": 1, "unread": 0}
        refused = await client.call_tool("mark_notifications_read", {"ids": []})
        assert refused.is_error and "ids" in refused.content[0].text
        assert data(await client.call_tool("count_notifications", {})) == {"unread": 0}
