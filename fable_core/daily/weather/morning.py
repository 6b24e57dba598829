"""The weather in the morning note, and the job that keeps it fresh for it.

The ``weather`` section (order 30) reads each journal location's cached forecast for the day
being prepared, with what changed since yesterday: it fetches nothing (a morning note's gather
must take milliseconds, and a slow weather service must not delay it). The forecasts are kept
fresh by the ``refresh_journal_weather`` job, every :data:`EVERY` seconds: the journal locations
of every user whose cached forecast is older than
:data:`~fable_core.daily.weather.forecasts.STALE_AFTER` (or missing) are fetched, at most
:data:`PER_RUN` places a run, :data:`AT_ONCE` at a time. Forecasts nobody had refreshed for
:data:`FORGET_AFTER` (points asked for once, places taken out of a journal) are deleted.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.daily.journal.sections import PrepDay, section
from fable_core.daily.weather import changes as reading
from fable_core.daily.weather.forecasts import STALE_AFTER, Place, refresh_places
from fable_core.db.models import Setting, WeatherForecast
from fable_core.people.preferences.journal import JOURNAL, JournalPrefs
from fable_core.tools.access import owned_by
from fable_core.tools.caller import Caller
from fable_core.tools.jobs import job

if TYPE_CHECKING:
    from fable_core.tools.runtime import Runtime

__all__ = ["AT_ONCE", "EVERY", "FORGET_AFTER", "PER_RUN", "render_weather", "weather_of_the_day"]

EVERY = 1800
FORGET_AFTER = timedelta(days=30)
PER_RUN = 200
AT_ONCE = 4
_log = logging.getLogger(__name__)


def render_weather(places: list[dict[str, Any]]) -> str:
    """The section's lines without an LLM: one per place."""
    lines = []
    for p in places:
        sign = "°F" if p["unit"] == "fahrenheit" else "°C"
        parts = [p.get("summary", "")]
        if "low" in p and "high" in p:
            parts.append(f"{p['low']:g}–{p['high']:g}{sign}")
        if "rain_chance" in p:
            parts.append(f"rain {p['rain_chance']}%")
        line = f"- **{p['location']}**: " + ", ".join(x for x in parts if x)
        if p.get("changes"):
            line += "; " + "; ".join(p["changes"])
        lines.append(line)
    return "\n".join(lines)


@section("weather", order=30, render=render_weather, title="Weather")
async def weather_of_the_day(session: AsyncSession, caller: Caller, day: PrepDay) -> list[dict[str, Any]] | None:
    """Each journal location's forecast for the day, from the cache (nothing fetched)."""
    places = {loc.name: loc for loc in day.prefs.locations}
    if not places:
        return None
    rows = (await session.execute(select(WeatherForecast).where(
        owned_by(WeatherForecast, caller), WeatherForecast.location.in_(list(places))))).scalars()
    unit = day.prefs.temperature_unit
    found = []
    for row in rows:
        loc = places[row.location]
        forecast = next((d for d in reading.days(row.forecast) if d.day == day.day), None)
        if forecast is None or (row.lat, row.lon) != (loc.lat, loc.lon):
            continue
        item: dict[str, Any] = {"location": row.location, "unit": unit, "summary": forecast.summary}
        if forecast.high is not None and forecast.low is not None:
            item |= {"high": reading.degrees(forecast.high, unit), "low": reading.degrees(forecast.low, unit)}
        if forecast.rain_chance is not None:
            item["rain_chance"] = forecast.rain_chance
        if reading.today_of(row.forecast) == day.day and (told := reading.changes(row.forecast, row.previous, unit)):
            item["changes"] = told
        found.append(item)
    order = list(places)
    return sorted(found, key=lambda p: order.index(p["location"])) or None


@job(every=EVERY)
async def refresh_journal_weather(fable: Runtime) -> None:
    """Fetch the stale forecasts of every user's journal locations."""
    now = datetime.now(UTC)
    async with fable.db.reading() as session:
        settings = (await session.execute(select(Setting.user_id, Setting.value).where(
            Setting.key == JOURNAL.name))).all()
        fetched = {(user_id, location): (lat, lon, at) for user_id, location, lat, lon, at in await session.execute(
            select(WeatherForecast.user_id, WeatherForecast.location, WeatherForecast.lat, WeatherForecast.lon,
                   WeatherForecast.fetched_at))}
    work: list[tuple[Caller, Place]] = []
    for user_id, value in settings:
        try:
            prefs = JournalPrefs.model_validate(value)
        except ValueError:
            continue
        for loc in prefs.locations:
            lat, lon, at = fetched.get((user_id, loc.name), (None, None, None))
            if at is None or now - at >= STALE_AFTER or (lat, lon) != (loc.lat, loc.lon):
                work.append((Caller(user_id=user_id), Place(loc.name, loc.lat, loc.lon)))
    gate = asyncio.Semaphore(AT_ONCE)

    async def one(caller: Caller, place: Place) -> None:
        async with gate:
            _, errors = await refresh_places(fable.settings, [place], {}, "always", fable.db.transaction, caller)
            for error in errors.values():
                _log.info("weather for %s (user %s) not refreshed: %s", place.name, caller.user_id, error.message)

    await asyncio.gather(*(one(*w) for w in work[:PER_RUN]))
    async with fable.db.transaction() as session:  # points asked for once, and places no longer in a journal
        await session.execute(delete(WeatherForecast).where(WeatherForecast.fetched_at < now - FORGET_AFTER))
