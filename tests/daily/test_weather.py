"""The weather against a fake Nominatim and Open-Meteo at the wire: forecasts for journal
locations and points, the cache (fetched once an hour, the day before's forecast kept), what
changed since yesterday, finding places, the morning note's section and the refresh job, a slow
or dead service (a clear error, nobody else waits), and bad input refused with nothing written."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import func, select, update
from support.daily import TIMEOUT, Api, Call
from support.servers import free_port
from support.weather import FakeWeather, forecast

from fable_core.daily.journal.sections import SECTIONS, PrepDay
from fable_core.db.models import WeatherForecast
from fable_core.errors import InvalidInput, NotFound, Unavailable
from fable_core.people.preferences.journal import JournalPrefs
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.jobs import run_job

D = date(2026, 12, 5)
HOME = {"name": "Home", "lat": 47.37, "lon": 8.54}
WORK = {"name": "Work", "lat": 47.5, "lon": 8.72}
ZURICH = [{"place_id": 1, "lat": "47.3744489", "lon": "8.5410422", "category": "boundary", "type": "administrative",
           "name": "Zürich", "display_name": "Zürich, Bezirk Zürich, Zürich, Schweiz/Suisse/Svizzera/Svizra"}]


async def _journal(call: Call, *locations: dict, unit: str = "celsius", as_: Caller | None = None) -> None:
    await call("set_setting", key="journal", value={"locations": list(locations), "temperature_unit": unit},
               as_=as_)


async def _rows(fable: Fable) -> list[WeatherForecast]:
    async with fable.db.reading() as session:
        return list((await session.execute(select(WeatherForecast).order_by(WeatherForecast.id))).scalars())


async def _age(fable: Fable, hours: float) -> None:
    async with fable.db.transaction() as session:
        await session.execute(update(WeatherForecast).values(
            fetched_at=func.now() - timedelta(hours=hours)))


async def test_journal_locations_get_their_forecast_fetched_once_an_hour(
        call: Call, daily_fable: Fable, weather: FakeWeather) -> None:
    await _journal(call, HOME, WORK)
    weather.forecast = forecast(D, [6, 9, 11, 12], [10, 70, 20, 0], now=4.5)

    report = await call("get_weather")
    assert [w["location"] for w in report["items"]] == ["Home", "Work"]
    home = report["items"][0]
    assert home["now"] == 4.5 and home["now_summary"] == "overcast" and home["unit"] == "celsius"
    assert [d["date"] for d in home["days"]] == ["2026-12-05", "2026-12-06", "2026-12-07"]  # yesterday left out
    assert home["days"][0] == {"date": "2026-12-05", "summary": "light rain", "high": 9.0, "low": 1.0,
                               "rain_chance": 70, "rain_mm": 3.5}
    assert "error" not in home and "stale" not in home
    asked = weather.asked("/v1/forecast")
    assert len(asked) == 2 and {a["query"]["latitude"] for a in asked} == {"47.37", "47.5"}
    assert all(a["user_agent"].startswith("Fable/") for a in asked)
    assert asked[0]["query"]["past_days"] == "1"

    again = await call("get_weather", location="home")  # case aside
    assert [w["location"] for w in again["items"]] == ["Home"] and len(weather.asked("/v1/forecast")) == 2
    await _age(daily_fable, 2)
    cached = await call("get_weather", cached=True)
    assert all(w["stale"] for w in cached["items"]) and len(weather.asked("/v1/forecast")) == 2
    await call("get_weather")  # over an hour old: fetched again
    assert len(weather.asked("/v1/forecast")) == 4
    await call("refresh_weather", location="Work")
    assert len(weather.asked("/v1/forecast")) == 5
    assert len(await _rows(daily_fable)) == 2


async def test_what_changed_since_yesterday_is_told_and_a_same_day_refresh_keeps_the_comparison(
        call: Call, daily_fable: Fable, weather: FakeWeather) -> None:
    await _journal(call, HOME)
    weather.forecast = forecast(D, [6, 8, 9, 9], [0, 10, 10, 10])  # Dec 6: dry, high 9
    first = (await call("get_weather"))["items"][0]
    assert "changes" not in first

    weather.forecast = forecast(D + timedelta(days=1), [8, 13, 10, 10], [10, 80, 10, 10])  # the next morning
    second = (await call("refresh_weather"))["items"][0]
    assert second["changes"] == ["warmer than yesterday: high 13°C (yesterday 8°C)",
                                 "rain now expected (80%, was 10%)", "high revised up to 13°C (was 9°C)"]
    [row] = await _rows(daily_fable)
    assert row.previous is not None and row.previous["current"]["time"].startswith("2026-12-05")

    weather.forecast = forecast(D + timedelta(days=1), [8, 11, 10, 10], [10, 20, 10, 10])  # later that day
    third = (await call("refresh_weather"))["items"][0]
    assert third["changes"] == ["warmer than yesterday: high 11°C (yesterday 8°C)"]  # no rain, a revision < 3°
    [row] = await _rows(daily_fable)
    assert row.previous["current"]["time"].startswith("2026-12-05")  # still the day before's

    await _journal(call, HOME, unit="fahrenheit")
    shown = (await call("get_weather", cached=True))["items"][0]
    assert shown["unit"] == "fahrenheit" and shown["days"][0]["high"] == 51.8
    assert shown["changes"] == ["warmer than yesterday: high 51.8°F (yesterday 46.4°F)"]


async def test_a_point_is_cached_under_its_name_or_its_coordinates(
        call: Call, daily_fable: Fable, weather: FakeWeather, bob: Caller) -> None:
    point = await call("get_weather", lat=46.5, lon=7.25)
    assert point["items"][0]["location"] == "46.5000,7.2500"
    named = await call("get_weather", lat=46.5, lon=7.25, location="Cabin")
    assert named["items"][0]["location"] == "Cabin"
    assert (await call("get_weather", as_=bob)) == {"items": []}  # bob has no locations, and sees none of alice's
    assert {r.location for r in await _rows(daily_fable)} == {"46.5000,7.2500", "Cabin"}


async def test_places_are_found_by_name_and_a_name_that_finds_none_is_a_clear_error(
        call: Call, daily_fable: Fable, weather: FakeWeather, api: Api, alice: Caller) -> None:
    weather.places["zurich"] = ZURICH
    found = await call("find_place", place="Zurich")
    assert found == {"items": [{"name": "Zürich", "label": ZURICH[0]["display_name"], "lat": 47.37445,
                                "lon": 8.54104}]}
    [asked] = weather.asked("/search")
    assert asked["query"] == {"q": "Zurich", "format": "jsonv2", "limit": "5"}
    assert asked["user_agent"].startswith("Fable/")

    with pytest.raises(NotFound, match="no place called 'Atlantis'"):
        await call("find_place", place="Atlantis")
    async with api(alice) as http:
        r = await http.get("/weather/places", params={"place": "Atlantis"})
        assert r.status_code == 404 and "no place called 'Atlantis'" in r.json()["error"]["message"]
        ok = await http.get("/weather/places", params={"place": "zurich"})
        assert ok.status_code == 200 and ok.json()["items"][0]["name"] == "Zürich"
    assert await _rows(daily_fable) == []


@pytest.mark.parametrize(("arguments", "message"), [
    ({"lat": 47.3}, "give both lat and lon"),
    ({"lon": 8.5}, "give both lat and lon"),
    ({"lat": 91, "lon": 8.5}, "lat"),
    ({"lat": 47, "lon": -181}, "lon"),
    ({"location": "Moon"}, "no journal location is called 'Moon'"),
    ({"location": ""}, "location"),
])
async def test_bad_input_is_refused_on_every_surface_with_nothing_fetched_or_written(
        call: Call, daily_fable: Fable, weather: FakeWeather, api: Api, alice: Caller,
        arguments: dict, message: str) -> None:
    await _journal(call, HOME)
    with pytest.raises(InvalidInput, match=message):
        await call("get_weather", **arguments)
    async with api(alice) as http:
        r = await http.get("/weather", params=arguments)
        assert r.status_code == 422 and message in r.text
    assert weather.requests == [] and await _rows(daily_fable) == []


async def test_a_slow_service_fails_after_the_timeout_and_nobody_else_waits(
        call: Call, daily_fable: Fable, weather: FakeWeather, bob: Caller, api: Api) -> None:
    await _journal(call, HOME)
    weather.delay = TIMEOUT * 4
    started = time.monotonic()
    slow = asyncio.create_task(call("get_weather", location="Home"))
    await asyncio.sleep(0.2)
    others = time.monotonic()
    async with api(bob) as http:  # another user, over HTTP, meanwhile
        r = await http.post("/moments", json={"text": "lunch with Ana"})
        assert r.status_code == 201
        assert (await http.get("/notes")).status_code == 200
    assert time.monotonic() - others < TIMEOUT / 2
    assert not slow.done()
    with pytest.raises(Unavailable, match=f"did not answer within {TIMEOUT:g} s"):
        await slow
    assert time.monotonic() - started < TIMEOUT * 2
    assert await _rows(daily_fable) == []


async def test_a_failing_service_shows_the_cached_forecast_with_why_it_is_old(
        call: Call, daily_fable: Fable, weather: FakeWeather, api: Api, alice: Caller) -> None:
    await _journal(call, HOME, WORK)
    await call("get_weather", location="Home")
    await _age(daily_fable, 3)
    weather.status = 503
    report = await call("get_weather")
    home, work = report["items"]
    assert home["stale"] and "Open-Meteo answered HTTP 503" in home["error"] and home["days"]
    assert "days" not in work or work["days"] == []
    assert "Open-Meteo answered HTTP 503" in work["error"]
    with pytest.raises(Unavailable, match="HTTP 503"):
        await call("refresh_weather", location="Work")  # nothing cached to show instead
    async with api(alice) as http:
        r = await http.post("/weather/refresh", json={"location": "Work"})
        assert r.status_code == 503 and r.json()["error"]["type"] == "unavailable"


async def test_a_dead_service_is_a_clear_error(settings, weather_url: str, alice: Caller) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    async with await Fable.open(settings.model_copy(update={"fable_open_meteo_url": dead,
                                                              "fable_nominatim_url": dead}), migrate=False) as fable:
        with pytest.raises(Unavailable, match="Open-Meteo could not be reached"):
            await fable.call("get_weather", {"lat": 1, "lon": 2}, alice)
        with pytest.raises(Unavailable, match="Nominatim could not be reached"):
            await fable.call("find_place", {"place": "Bern"}, alice)


async def test_the_morning_note_shows_each_locations_day_from_the_cache_kept_fresh_by_the_job(
        call: Call, daily_fable: Fable, weather: FakeWeather, alice: Caller, bob: Caller) -> None:
    await _journal(call, HOME, WORK)
    await _journal(call, {"name": "Home", "lat": 46.0, "lon": 7.0}, as_=bob)
    weather.forecast = forecast(D, [6, 9, 11, 12], [10, 70, 20, 0])
    assert await run_job(daily_fable, "refresh_journal_weather")
    assert len(weather.asked("/v1/forecast")) == 3 and len(await _rows(daily_fable)) == 3
    await call("get_weather", lat=1.5, lon=2.5)  # a point, asked for once
    assert await run_job(daily_fable, "refresh_journal_weather")
    assert len(weather.asked("/v1/forecast")) == 4  # all fresh: nothing fetched
    async with daily_fable.db.transaction() as session:
        await session.execute(update(WeatherForecast).where(WeatherForecast.location == "1.5000,2.5000")
                              .values(fetched_at=func.now() - timedelta(days=31)))
    assert await run_job(daily_fable, "refresh_journal_weather")
    assert len(await _rows(daily_fable)) == 3 and len(weather.asked("/v1/forecast")) == 4  # forgotten, not fetched

    zone = ZoneInfo("Europe/Zurich")
    start = datetime(2026, 12, 5, tzinfo=zone)
    prefs = JournalPrefs.model_validate({"locations": [HOME, WORK]})
    day = PrepDay(alice.user_id, D, zone, start.astimezone(UTC), (start + timedelta(days=1)).astimezone(UTC), prefs)
    weather.reset()
    async with daily_fable.db.reading() as session:
        gathered = await SECTIONS["weather"].gather(session, alice, day)
    assert weather.requests == []  # the note fetches nothing
    assert gathered == [{"location": "Home", "unit": "celsius", "summary": "light rain", "high": 9.0, "low": 1.0,
                         "rain_chance": 70, "changes": ["warmer than yesterday: high 9°C (yesterday 6°C)"]},
                        {"location": "Work", "unit": "celsius", "summary": "light rain", "high": 9.0, "low": 1.0,
                         "rain_chance": 70, "changes": ["warmer than yesterday: high 9°C (yesterday 6°C)"]}]
    assert SECTIONS["weather"].render(gathered).splitlines()[0] == (
        "- **Home**: light rain, 1–9°C, rain 70%; warmer than yesterday: high 9°C (yesterday 6°C)")
    assert SECTIONS["weather"].order == 30
    nothing = PrepDay(alice.user_id, D, zone, day.start, day.end, JournalPrefs())
    async with daily_fable.db.reading() as session:
        assert await SECTIONS["weather"].gather(session, alice, nothing) is None
