"""``tool_usage``: calls per tool from the usage rows, for choosing what MCP clients are offered."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert

from fable_core.db.models import AppLog
from fable_core.errors import Forbidden, InvalidInput
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def _calls(fable: Fable, admin: Caller, **arguments: object) -> dict[str, dict[str, object]]:
    await fable.dispatcher.usage.flush()  # rows of earlier calls land before this one counts
    result = await fable.call("tool_usage", dict(arguments), admin)
    return {row["tool"]: row for row in result["items"]}


async def test_calls_are_counted_per_tool_within_the_days_and_the_surface(
        fable: Fable, alice: Caller, bob: Caller) -> None:
    admin = replace(alice, credential="session")
    now = datetime.now(UTC)
    before = await _calls(fable, admin, days=30, surface="mcp")
    rows = [{"category": "usage", "action": "list_moments", "user_id": who.user_id, "surface": surface,
             "created_at": now - timedelta(days=age)}
            for who, surface, age in [(alice, "mcp", 1), (bob, "mcp", 2), (bob, "mcp", 29), (bob, "mcp", 40),
                                      (bob, "rest", 1)]]
    async with fable.db.transaction() as session:
        await session.execute(insert(AppLog), rows)
    after = await _calls(fable, admin, days=30, surface="mcp")
    counted = before.get("list_moments", {"calls": 0})["calls"]
    assert after["list_moments"]["calls"] == counted + 3  # not 40 days ago, not over REST
    assert after["list_moments"]["toolset"] == "journal" and after["list_moments"]["default"] is True
    assert after["list_moments"]["people"] >= 2
    every = await _calls(fable, admin, days=60)
    assert every["list_moments"]["calls"] >= counted + 5


@pytest.mark.parametrize("arguments", [{"days": 0}, {"days": 400}, {"surface": "fax"}])
async def test_bad_arguments_are_refused(fable: Fable, alice: Caller, arguments: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        await fable.call("tool_usage", arguments, replace(alice, credential="session"))


async def test_it_is_for_admins_in_person(fable: Fable, alice: Caller, bob: Caller) -> None:
    with pytest.raises(Forbidden):
        await fable.call("tool_usage", {}, replace(bob, credential="session"))
    with pytest.raises(Forbidden):
        await fable.call("tool_usage", {}, replace(alice, credential="key"))
