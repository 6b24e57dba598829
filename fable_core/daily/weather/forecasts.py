"""The weather as tools: each user's forecasts, cached per place, refreshed when asked or stale.

A place is one of the user's journal locations (the ``journal`` setting: a name, lat and lon),
or any point given as ``lat``/``lon`` (cached under ``location`` when given, else under
``"lat,lon"``). A forecast is fetched again when it is older than :data:`STALE_AFTER`, when its
place moved, or when refreshing is asked; ``cached`` answers from the cache alone, fetching
nothing. Fetches run outside any database phase, places side by side: a slow service holds
no connection, and fails after ``FABLE_WEATHER_TIMEOUT`` with the cached forecast (marked
``stale``) when there is one.

The cache keeps, beside each forecast, the last one fetched on an earlier day (``previous``):
what :func:`fable_core.daily.weather.changes.changes` compares today with.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints
from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.config import Settings
from fable_core.daily.weather import changes as reading
from fable_core.daily.weather.services import fetch_forecast
from fable_core.db.models import WeatherForecast
from fable_core.errors import FableError, InvalidInput
from fable_core.people.preferences.journal import JOURNAL, JournalPrefs
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import owned_by
from fable_core.tools.caller import Caller
from fable_core.tools.preferences import read_setting
from fable_core.tools.results import absent_when_none

__all__ = ["STALE_AFTER", "Place", "Weather", "WeatherReport", "refresh_places", "view"]

STALE_AFTER = timedelta(hours=1)
Lat = Annotated[float, Field(ge=-90, le=90)]
Lon = Annotated[float, Field(ge=-180, le=180)]
LocationName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=60)]


@dataclass(frozen=True, slots=True)
class Place:
    name: str
    lat: float
    lon: float


class DayView(BaseModel):
    date: date
    summary: str
    high: float | None = absent_when_none()
    low: float | None = absent_when_none()
    rain_chance: int | None = absent_when_none("Chance of rain, %.")
    rain_mm: float | None = absent_when_none()


class Weather(BaseModel):
    location: str
    lat: float
    lon: float
    unit: Literal["celsius", "fahrenheit"]
    now: float | None = absent_when_none("Temperature now.")
    now_summary: str | None = absent_when_none()
    days: list[DayView] = Field(default_factory=list, description="Today first.")
    changes: list[str] = Field(default_factory=list, exclude_if=lambda v: not v,
                               description="What changed since yesterday.")
    fetched_at: datetime | None = absent_when_none()
    stale: bool = Field(False, exclude_if=lambda v: not v, description="Over an hour old.")
    error: str | None = absent_when_none("Why there is no forecast.")


class WeatherReport(BaseModel):
    items: list[Weather]


@tool(group="weather", title="Weather", scope="read", transaction="phases", open_world=True,
      route=Route("GET", "/weather"))
async def get_weather(ctx: Context, location: LocationName | None = None, lat: Lat | None = None,
                      lon: Lon | None = None, cached: bool = False) -> WeatherReport:
    """Forecast and changes since yesterday for your journal locations, one, or lat/lon;
    refetched hourly unless `cached`."""
    return await _report(ctx, location, lat, lon, "cached" if cached else "stale")


@tool(group="weather", title="Refresh the weather", scope="write", idempotent=True, transaction="phases",
      open_world=True,
      route=Route("POST", "/weather/refresh"))
async def refresh_weather(ctx: Context, location: LocationName | None = None) -> WeatherReport:
    """Refetch the weather of your journal locations (or one)."""
    return await _report(ctx, location, None, None, "always")


Fetching = Literal["cached", "stale", "always"]


async def _report(ctx: Context, location: str | None, lat: float | None, lon: float | None,
                  fetching: Fetching) -> WeatherReport:
    async with ctx.reading() as session:
        prefs = await read_setting(session, ctx.caller, JOURNAL)
        places = _places(prefs, location, lat, lon)
        cached = await _cached(session, ctx.caller, [p.name for p in places])
    rows, errors = await refresh_places(ctx.settings, places, cached, fetching, ctx.transaction, ctx.caller)
    if len(places) == 1 and places[0].name in errors and places[0].name not in rows:
        raise errors[places[0].name]
    return WeatherReport(items=[view(p, rows.get(p.name), prefs.temperature_unit, errors.get(p.name))
                                for p in places])


def _places(prefs: JournalPrefs, location: str | None, lat: float | None, lon: float | None) -> list[Place]:
    if (lat is None) != (lon is None):
        raise InvalidInput("give both lat and lon, or neither", field="lat" if lat is None else "lon")
    if lat is not None and lon is not None:
        return [Place(location or f"{lat:.4f},{lon:.4f}", lat, lon)]
    journal = [Place(loc.name, loc.lat, loc.lon) for loc in prefs.locations]
    if location is None:
        return journal
    found = [p for p in journal if p.name.casefold() == location.casefold()]
    if not found:
        names = ", ".join(p.name for p in journal) or "none yet"
        raise InvalidInput(f"no journal location is called {location!r} (yours: {names}); add it to the "
                           "journal setting, or give lat and lon (find_place finds them)", field="location")
    return found


async def _cached(session: AsyncSession, caller: Caller, names: list[str]) -> dict[str, WeatherForecast]:
    if not names:
        return {}
    rows = (await session.execute(select(WeatherForecast).where(
        owned_by(WeatherForecast, caller), WeatherForecast.location.in_(names)))).scalars()
    return {row.location: row for row in rows}


def _due(place: Place, row: WeatherForecast | None, fetching: Fetching, now: datetime) -> bool:
    if fetching == "cached":
        return False
    if fetching == "always" or row is None or (row.lat, row.lon) != (place.lat, place.lon):
        return True
    return now - row.fetched_at >= STALE_AFTER


Transaction = Callable[[], AbstractAsyncContextManager[AsyncSession]]


async def refresh_places(settings: Settings, places: list[Place], cached: dict[str, WeatherForecast],
                         fetching: Fetching, transaction: Transaction, caller: Caller,
                         ) -> tuple[dict[str, WeatherForecast], dict[str, FableError]]:
    """Fetch the places that are due (side by side, outside any database phase), store what came
    in one ``transaction()``; the rows by place name (a cached row only for the place it was
    fetched for), and each failed place's error."""
    now = datetime.now(UTC)
    due = [p for p in places if _due(p, cached.get(p.name), fetching, now)]
    fetched = await asyncio.gather(*(fetch_forecast(settings, p.lat, p.lon) for p in due), return_exceptions=True)
    rows = {p.name: cached[p.name] for p in places
            if p.name in cached and (cached[p.name].lat, cached[p.name].lon) == (p.lat, p.lon)}
    errors: dict[str, FableError] = {}
    stored = [(p, f) for p, f in zip(due, fetched, strict=True) if isinstance(f, dict)]
    for p, f in zip(due, fetched, strict=True):
        if isinstance(f, FableError):
            errors[p.name] = f
        elif isinstance(f, BaseException):
            raise f
    if stored:
        async with transaction() as session:
            for place, forecast in stored:
                rows[place.name] = await _store(session, caller, place, forecast, now)
    return rows, errors


async def _store(session: AsyncSession, caller: Caller, place: Place, forecast: dict[str, Any],
                 now: datetime) -> WeatherForecast:
    """Upsert the forecast; the one it replaces becomes ``previous`` when it was fetched for an
    earlier day at the same place (a forecast refreshed within a day keeps yesterday's)."""
    old = (await session.execute(select(WeatherForecast).where(
        owned_by(WeatherForecast, caller), WeatherForecast.location == place.name).with_for_update())).scalar()
    previous, previous_at = None, None
    if old is not None and (old.lat, old.lon) == (place.lat, place.lon):
        previous, previous_at = old.previous, old.previous_fetched_at
        old_day, new_day = reading.today_of(old.forecast), reading.today_of(forecast)
        if old_day is not None and new_day is not None and old_day < new_day:
            previous, previous_at = old.forecast, old.fetched_at
    values = {"lat": place.lat, "lon": place.lon, "fetched_at": now, "forecast": forecast, "previous": previous,
              "previous_fetched_at": previous_at}
    stmt = insert(WeatherForecast).values(user_id=caller.user_id, location=place.name, **values)
    stmt = stmt.on_conflict_do_update(constraint="uq_weather_forecasts_user_location", set_=values)
    return (await session.execute(stmt.returning(WeatherForecast), execution_options={"populate_existing": True}
                                  )).scalar_one()


def view(place: Place, row: WeatherForecast | None, unit: reading.Unit, error: FableError | None = None) -> Weather:
    """What the tools show of a place's cached forecast (``row``; None: there is none)."""
    base = Weather(location=place.name, lat=place.lat, lon=place.lon, unit=unit)
    if row is None:
        base.error = error.message if error else "no forecast fetched yet; refresh_weather fetches one"
        return base
    temp, summary = reading.now(row.forecast)
    base.now = reading.degrees(temp, unit) if temp is not None else None
    base.now_summary = summary
    base.days = [DayView(date=d.day, summary=d.summary,
                         high=reading.degrees(d.high, unit) if d.high is not None else None,
                         low=reading.degrees(d.low, unit) if d.low is not None else None,
                         rain_chance=d.rain_chance, rain_mm=d.rain_mm) for d in reading.days(row.forecast)]
    base.changes = reading.changes(row.forecast, row.previous, unit)
    base.fetched_at = row.fetched_at
    base.stale = datetime.now(UTC) - row.fetched_at >= STALE_AFTER
    if error is not None:
        base.error = f"showing the forecast of {row.fetched_at:%Y-%m-%d %H:%M} UTC: {error.message}"
    return base
