"""Moments, the profile and the weather over MCP, as a client's model reads them: compact
results (no empty fields), bad input as tool errors that change nothing, another user's moment
as not found."""

from __future__ import annotations

from sqlalchemy import func, select
from support.mcp_clients import data

from fable_core.db.models import Moment
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def _count(fable: Fable) -> int:
    async with fable.db.reading() as session:
        return await session.scalar(select(func.count()).select_from(Moment)) or 0


async def test_an_agent_records_finds_and_changes_moments(connect_fast, fable: Fable, alice: Caller,
                                                          bob: Caller) -> None:
    async with connect_fast() as client:
        moment = data(await client.call_tool("record_moment", {"text": "Swam in the lake", "tags": ["summer"]}))
        assert set(moment) == {"id", "text", "at", "tags"}
        found = data(await client.call_tool("list_moments", {"query": "lake"}))
        assert found["mode"] == "keyword" and [m["id"] for m in found["items"]] == [moment["id"]]
        for bad in ({"text": "x", "at": "2999-01-01T00:00:00Z"}, {"text": "x", "mood": "m" * 41}, {}):
            refused = await client.call_tool("record_moment", bad)
            assert refused.is_error
        assert await _count(fable) == 1
    bobs = await fable.call("record_moment", {"text": "bob's"}, bob)
    async with connect_fast() as client:
        hidden = await client.call_tool("delete_moment", {"moment_id": bobs["id"]})
        assert hidden.is_error and f"moment {bobs['id']} not found" in hidden.content[0].text
    assert await _count(fable) == 2


async def test_an_agent_keeps_the_profile_and_asks_for_a_place_it_cannot_name(connect_fast, fable: Fable) -> None:
    async with connect_fast() as client:
        observed = data(await client.call_tool("record_observation", {"text": "Likes early mornings"}))
        assert observed["text"] == "Likes early mornings"
        profile = data(await client.call_tool("update_profile", {"facts": ["I am a nurse"]}))
        assert profile["facts"] == ["I am a nurse"] and "summary" not in profile
        nothing = await client.call_tool("update_profile", {})
        assert nothing.is_error and "nothing to change" in nothing.content[0].text
        unknown = await client.call_tool("get_weather", {"location": "Office"})
        assert unknown.is_error and "no journal location is called 'Office'" in unknown.content[0].text
        assert data(await client.call_tool("get_weather", {})) == {"items": []}
