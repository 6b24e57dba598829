"""Journal days: one conversation per user and day, in the user's zone; a given day; a range."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import func, select

from fable_core.db.models import Conversation, JournalDay
from fable_core.errors import InvalidInput
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

LATER = datetime.now(UTC).date() + timedelta(days=3)  # after today in every zone


def today_in(zone: str) -> date:
    return datetime.now(UTC).astimezone(ZoneInfo(zone)).date()


async def count(fable: Fable, model: type) -> int:
    async with fable.db.reading() as session:
        return await session.scalar(select(func.count()).select_from(model)) or 0


async def test_today_is_one_journal_conversation_per_user_opened_again_not_made_again(
        fable: Fable, alice: Caller, bob: Caller) -> None:
    first = await fable.call("open_journal", {}, alice)
    again = await fable.call("open_journal", {"day": first["day"]}, alice)
    bobs = await fable.call("open_journal", {}, bob)
    assert first == again == {"day": today_in("UTC").isoformat(), "conversation_id": first["conversation_id"],
                              "prep": "none"}
    assert bobs["conversation_id"] != first["conversation_id"]
    conversation = await fable.call("get_conversation", {"conversation_id": first["conversation_id"]}, alice)
    assert conversation["conversation_type"] == "journal" and conversation["messages"] == []
    today = today_in("UTC")
    assert conversation["title"] == f"Journal {today:%A} {today.day} {today:%B %Y}"
    assert (await count(fable, JournalDay), await count(fable, Conversation)) == (2, 2)


async def test_opening_a_new_day_at_once_from_many_places_makes_one(fable: Fable, alice: Caller) -> None:
    opened = await asyncio.gather(*(fable.call("open_journal", {}, alice) for _ in range(6)))
    assert len({o["conversation_id"] for o in opened}) == 1
    assert (await count(fable, JournalDay), await count(fable, Conversation)) == (1, 1)


async def test_the_day_is_the_date_in_the_journals_zone_else_the_users_timezone(fable: Fable, alice: Caller) -> None:
    await fable.call("set_setting", {"key": "timezone", "value": "Pacific/Kiritimati"}, alice)  # UTC+14
    assert (await fable.call("open_journal", {}, alice))["day"] == today_in("Pacific/Kiritimati").isoformat()
    await fable.call("set_setting", {"key": "journal", "value": {"timezone": "Pacific/Pago_Pago"}}, alice)  # UTC-11
    assert (await fable.call("open_journal", {}, alice))["day"] == today_in("Pacific/Pago_Pago").isoformat()


async def test_a_past_day_opens_and_a_range_lists_the_days_newest_first(
        fable: Fable, alice: Caller, bob: Caller) -> None:
    today = today_in("UTC")
    for back in (0, 2, 40):
        await fable.call("open_journal", {"day": (today - timedelta(days=back)).isoformat()}, alice)
    await fable.call("open_journal", {}, bob)
    recent = await fable.call("list_journal_days", {}, alice)
    assert [d["day"] for d in recent["items"]] == [today.isoformat(), (today - timedelta(days=2)).isoformat()]
    wide = await fable.call("list_journal_days", {"start": (today - timedelta(days=60)).isoformat(),
                                                  "end": today.isoformat()}, alice)
    assert len(wide["items"]) == 3 and wide["items"][-1]["day"] == (today - timedelta(days=40)).isoformat()
    assert set(wide["items"][0]) == {"day", "conversation_id", "prep"}


@pytest.mark.parametrize(("tool", "arguments", "said"), [
    ("open_journal", {"day": "tomorrow"}, "day"),
    ("open_journal", {"day": (LATER).isoformat()}, "is after today"),
    ("prepare_journal", {"day": (LATER).isoformat()}, "is after today"),
    ("list_journal_days", {"start": "2026-03-10", "end": "2026-03-01"}, "is before start"),
    ("list_journal_days", {"start": "2025-01-01", "end": "2025-12-31"}, "at most 92 days"),
])
async def test_bad_days_are_refused_clearly_and_change_nothing(
        fable: Fable, alice: Caller, tool: str, arguments: dict, said: str) -> None:
    with pytest.raises(InvalidInput, match=said):
        await fable.call(tool, arguments, alice)
    assert (await count(fable, JournalDay), await count(fable, Conversation)) == (0, 0)


async def test_a_deleted_journal_conversation_takes_its_day_with_it_and_the_day_opens_afresh(
        fable: Fable, alice: Caller) -> None:
    first = await fable.call("open_journal", {}, alice)
    await fable.call("delete_conversation", {"conversation_id": first["conversation_id"]}, alice)
    assert await count(fable, JournalDay) == 0
    again = await fable.call("open_journal", {}, alice)
    assert again["conversation_id"] != first["conversation_id"]
