"""The whole morning note, end to end: every domain's section (the journal's tasks, the
calendar's events, the weather, the moments) in one prepared opener, written without a model
from the sections' own lines, and nothing of another user's in it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from support.daily import Call
from support.weather import FakeWeather, forecast

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.jobs import run_job

ZURICH = ZoneInfo("Europe/Zurich")


async def test_the_prepared_opener_has_every_domains_section_in_order(
        call: Call, daily_fable: Fable, weather: FakeWeather, alice: Caller, bob: Caller) -> None:
    today = datetime.now(ZURICH).date()
    await call("set_setting", key="timezone", value="Europe/Zurich")
    await call("set_setting", key="journal", value={"locations": [{"name": "Home", "lat": 47.37, "lon": 8.54}]})
    weather.forecast = forecast(today, [4, 7, 9, 9], [0, 80, 10, 10])
    assert await run_job(daily_fable, "refresh_journal_weather")
    await call("create_note", title="Pay the rent", status="todo", due_date=today.isoformat())
    await call("create_event", title="Dentist", start=f"{today.isoformat()}T16:00", location="Bahnhofstrasse 3")
    await call("create_event", title="Bob's secret meeting", start=f"{today.isoformat()}T10:00", as_=bob)
    yesterday = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    await call("record_moment", text="Saw the first snow on the lake", at=yesterday)

    day = await call("prepare_journal")
    opener = day["opener"]
    positions = [opener.index(s) for s in ("**Due today**\n- Pay the rent", "**Today**\n- 16:00: Dentist",
                                           "**Weather**\n- **Home**", "**Recent moments**\n- ")]
    assert positions == sorted(positions), opener  # tasks, events, weather, moments: the sections' order
    assert "Bahnhofstrasse 3" in opener and "rain 80%" in opener and "Saw the first snow on the lake" in opener
    assert "secret" not in opener
