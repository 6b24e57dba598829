"""The settings tools through the dispatcher: every key listed with its default and meaning,
values checked by each key's type, unknown keys named with the close ones, resets, and the
time zone the calendar reads through the same key."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import text

from fable_core.errors import FableError, Forbidden, InvalidInput, NotFound
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.clock import user_timezone
from fable_core.tools.preferences import KEYS


async def _rows(fable: Fable) -> list[tuple[Any, ...]]:
    async with fable.db.engine.connect() as conn:
        return [tuple(r) for r in await conn.execute(text("SELECT user_id, key, value FROM settings ORDER BY 1, 2"))]


async def test_a_new_user_sees_every_key_with_its_default_and_no_nulls(call) -> None:
    items = (await call("list_settings"))["items"]
    assert [i["key"] for i in items] == list(KEYS)
    by_key = {i["key"]: i for i in items}
    assert by_key["timezone"] == {"key": "timezone", "value": "UTC", "default": "UTC",
                                  "description": KEYS["timezone"].description}
    assert set(by_key["assistant_name"]) == {"key", "description"}  # unset: no value, no default
    assert by_key["journal"]["value"]["days"] == ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]


async def test_set_get_and_reset_a_setting(call, fable: Fable, alice: Caller) -> None:
    changed = await call("set_setting", key="timezone", value=" Europe/Paris ")
    assert changed["value"] == "Europe/Paris" and changed["default"] == "UTC"
    detail = await call("get_setting", key="timezone")
    assert detail["value"] == "Europe/Paris" and detail["accepts"]["type"] == "string"
    async with fable.db.reading() as session:
        assert await user_timezone(session, alice) == "Europe/Paris"  # the calendar reads the same key
    assert await _rows(fable) == [(alice.user_id, "timezone", "Europe/Paris")]
    assert (await call("reset_setting", key="timezone"))["value"] == "UTC"
    assert await _rows(fable) == []
    assert (await call("reset_setting", key="timezone"))["value"] == "UTC"  # idempotent


async def test_a_default_or_null_value_stores_nothing(call, fable: Fable) -> None:
    await call("set_setting", key="default_model", value="qwen3:8b")
    assert (await call("get_setting", key="default_model"))["value"] == "qwen3:8b"
    assert "value" not in await call("set_setting", key="default_model", value=None)
    await call("set_setting", key="notifications", value={})  # the default, written out
    assert await _rows(fable) == []


async def test_a_chosen_time_zone_is_kept_even_when_it_is_the_default(call, fable: Fable) -> None:
    """UTC chosen is news that UTC by default is not: the web UI takes the browser's zone only
    while none was chosen (issue 38, item 1)."""
    await call("set_setting", key="timezone", value="UTC")
    assert await _rows(fable) != [] and (await call("get_me"))["timezone_chosen"] is True
    await call("reset_setting", key="timezone")
    assert await _rows(fable) == [] and (await call("get_me"))["timezone_chosen"] is False


async def test_the_journal_is_one_typed_object(call) -> None:
    journal = {"locations": [{"name": "Home", "lat": 48.85, "lon": 2.35}], "temperature_unit": "fahrenheit",
               "prep_time": "05:30", "days": ["fri", "mon"], "timezone": "Europe/Paris"}
    stored = (await call("set_setting", key="journal", value=journal))["value"]
    assert stored == {**journal, "prep_time": "05:30:00", "days": ["mon", "fri"]}
    assert (await call("get_setting", key="journal"))["accepts"]["additionalProperties"] is False


async def _refused(call, error: type[FableError], **arguments: Any) -> FableError:
    with pytest.raises(FableError) as caught:
        await call("set_setting", **arguments)
    assert type(caught.value) is error, caught.value
    return caught.value


async def test_an_unknown_key_is_refused_naming_the_close_ones_and_every_key(call, fable: Fable) -> None:
    err = await _refused(call, NotFound, key="time_zone", value="Europe/Paris")
    assert err.message.startswith("no setting named 'time_zone'; did you mean `timezone`?")
    assert "The settings are: timezone, assistant_name" in err.message
    assert err.details["did_you_mean"] == ["timezone"]
    with pytest.raises(NotFound, match=r"no setting named 'colour'\. The settings are"):
        await call("get_setting", key="colour")
    with pytest.raises(NotFound):
        await call("reset_setting", key="colour")
    assert await _rows(fable) == []


BAD_VALUES = [
    ("timezone", "Mars/Olympus_Mons", "is not a known time zone; use an IANA name such as 'Europe/Paris'"),
    ("timezone", "Europe/paris", "did you mean `Europe/Paris`?"),
    ("timezone", "../../etc/passwd", "is not a known time zone"),
    ("timezone", 5, "Input should be a valid string"),
    ("timezone", "", "at least 1 character"),
    ("assistant_name", "two\nlines", "one line of text"),
    ("assistant_name", "x" * 41, "at most 40 characters"),
    ("assistant_name", ["Ada"], "valid string"),
    ("default_model", "no spaces please", "should match pattern"),
    ("journal", {"locations": [{"name": "Pole", "lat": 91, "lon": 0}]}, "value.locations.0.lat: Input should be less"),
    ("journal", {"locations": [{"name": "A", "lat": 1, "lon": 2}, {"name": "a", "lat": 3, "lon": 4}]},
     "'a' is there twice"),
    ("journal", {"prep_time": "25:00"}, "value.prep_time"),
    ("journal", {"days": ["funday"]}, "value.days.0"),
    ("journal", {"temperature_unit": "kelvin"}, "'celsius' or 'fahrenheit'"),
    ("journal", {"timezone": "Nowhere/City"}, "value.timezone: 'Nowhere/City' is not a known time zone"),
    ("journal", {"location": []}, "value.location: Extra inputs are not permitted"),
    ("journal", "sunny", "valid dictionary"),
]


@pytest.mark.parametrize(("key", "value", "said"), BAD_VALUES)
async def test_a_bad_value_is_refused_clearly_and_changes_nothing(call, fable: Fable, key: str, value: Any,
                                                                  said: str) -> None:
    await call("set_setting", key="timezone", value="Asia/Tokyo")
    before = await _rows(fable)
    err = await _refused(call, InvalidInput, key=key, value=value)
    assert err.message.startswith(f"invalid value for {key}: ") and said in err.message, err.message
    assert err.details["key"] == key and err.details["errors"]
    assert await _rows(fable) == before


async def test_a_read_scope_caller_reads_but_cannot_change(call, alice: Caller, fable: Fable) -> None:
    reader = replace(alice, scope="read")
    assert (await call("get_setting", key="timezone", as_=reader))["value"] == "UTC"
    with pytest.raises(Forbidden):
        await call("set_setting", key="timezone", value="Europe/Paris", as_=reader)
    assert await _rows(fable) == []


async def test_settings_are_each_users_own(call, bob: Caller) -> None:
    await call("set_setting", key="timezone", value="Pacific/Auckland")
    assert (await call("get_setting", key="timezone", as_=bob))["value"] == "UTC"


async def test_a_stored_value_no_longer_valid_reads_as_the_default(call, fable: Fable, alice: Caller) -> None:
    async with fable.db.transaction() as session:
        await session.execute(text("INSERT INTO settings (user_id, key, value) VALUES "
                                   "(:u, 'timezone', '\"Atlantis/Capital\"'), (:u, 'retired_key', '1')"),
                              {"u": alice.user_id})
    items = {i["key"]: i for i in (await call("list_settings"))["items"]}
    assert items["timezone"]["value"] == "UTC" and "retired_key" not in items
    async with fable.db.reading() as session:
        assert await user_timezone(session, alice) == "UTC"


async def test_today_follows_the_setting(call) -> None:
    zone = "Pacific/Kiritimati"  # UTC+14: the date differs from UTC's for ten hours a day
    await call("set_setting", key="timezone", value=zone)
    expected = datetime.now(UTC).astimezone(ZoneInfo(zone)).date()
    agenda = await call("list_tasks")
    assert (agenda["timezone"], agenda["today"]) == (zone, expected.isoformat())


def test_every_setting_is_documented_in_tools_md() -> None:
    from pathlib import Path

    from fable_core.capabilities import load_capabilities

    load_capabilities()  # every domain's keys
    doc = (Path(__file__).resolve().parents[2] / "docs/tools.md").read_text()
    section = doc[doc.index("## Settings"):doc.index("## Conventions")]
    documented = set(re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE))
    assert documented == set(KEYS), "docs/tools.md's Settings table and the declared keys differ"
