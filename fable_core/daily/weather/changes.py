"""Reading a stored forecast: its days in words and numbers, and what changed.

Two comparisons, both on the day the forecast calls today (in the place's own zone):

- **with yesterday**: today's high against yesterday's (Open-Meteo sends yesterday too): a
  difference of :data:`WARMER` °C or more is "warmer" or "colder than yesterday";
- **with the forecast of an earlier day** (the cache's ``previous``): rain now expected (the
  chance of rain reached :data:`RAIN_LIKELY` % from below it), rain no longer expected (it fell
  below :data:`RAIN_UNLIKELY` % from :data:`RAIN_LIKELY` or more), and a high revised by
  :data:`WARMER` °C or more.

Temperatures are stored in °C and shown in the user's unit; thresholds hold in °C.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Literal

__all__ = ["RAIN_LIKELY", "RAIN_UNLIKELY", "WARMER", "Day", "Unit", "changes", "days", "now", "today_of"]

Unit = Literal["celsius", "fahrenheit"]
WARMER = 3.0
RAIN_LIKELY = 50
RAIN_UNLIKELY = 30

# WMO weather interpretation codes, as Open-Meteo documents them
_CODES = {0: "clear", 1: "mainly clear", 2: "partly cloudy", 3: "overcast", 45: "fog", 48: "rime fog",
          51: "light drizzle", 53: "drizzle", 55: "heavy drizzle", 56: "freezing drizzle", 57: "freezing drizzle",
          61: "light rain", 63: "rain", 65: "heavy rain", 66: "freezing rain", 67: "freezing rain",
          71: "light snow", 73: "snow", 75: "heavy snow", 77: "snow grains", 80: "light showers",
          81: "showers", 82: "violent showers", 85: "snow showers", 86: "heavy snow showers",
          95: "thunderstorm", 96: "thunderstorm with hail", 99: "thunderstorm with hail"}


@dataclass(frozen=True, slots=True)
class Day:
    """One day of a forecast, in °C."""

    day: date
    code: int | None
    high: float | None
    low: float | None
    rain_chance: int | None
    rain_mm: float | None

    @property
    def summary(self) -> str:
        return _CODES.get(self.code, "unknown") if self.code is not None else "unknown"


def degrees(celsius: float, unit: Unit) -> float:
    return round(float(celsius) * 9 / 5 + 32 if unit == "fahrenheit" else float(celsius), 1)


def _shown(celsius: float, unit: Unit) -> str:
    return f"{degrees(celsius, unit):g}{'°F' if unit == 'fahrenheit' else '°C'}"


def _at(values: Any, i: int) -> Any:
    return values[i] if isinstance(values, list) and i < len(values) else None


def all_days(forecast: dict[str, Any]) -> dict[date, Day]:
    daily = forecast.get("daily") or {}
    found: dict[date, Day] = {}
    for i, stamp in enumerate(daily.get("time") or []):
        try:
            when = date.fromisoformat(str(stamp))
        except ValueError:
            continue
        code = _at(daily.get("weather_code"), i)
        chance = _at(daily.get("precipitation_probability_max"), i)
        found[when] = Day(when, int(code) if code is not None else None,
                          _at(daily.get("temperature_2m_max"), i), _at(daily.get("temperature_2m_min"), i),
                          round(chance) if chance is not None else None, _at(daily.get("precipitation_sum"), i))
    return found


def today_of(forecast: dict[str, Any]) -> date | None:
    """The forecast's today: the date of its current conditions, else its second day (the first
    is yesterday)."""
    stamp = (forecast.get("current") or {}).get("time")
    if isinstance(stamp, str) and len(stamp) >= 10:
        try:
            return date.fromisoformat(stamp[:10])
        except ValueError:
            pass
    listed = sorted(all_days(forecast))
    return listed[1] if len(listed) > 1 else (listed[0] if listed else None)


def days(forecast: dict[str, Any]) -> list[Day]:
    """Today and the days after it."""
    today = today_of(forecast)
    return [d for when, d in sorted(all_days(forecast).items()) if today is None or when >= today]


def now(forecast: dict[str, Any]) -> tuple[float | None, str | None]:
    """The current temperature (°C) and conditions, when the forecast has them."""
    current = forecast.get("current") or {}
    code = current.get("weather_code")
    return current.get("temperature_2m"), (_CODES.get(int(code), "unknown") if code is not None else None)


def changes(forecast: dict[str, Any], previous: dict[str, Any] | None, unit: Unit) -> list[str]:
    """What is worth telling about today: against yesterday, and against an earlier forecast."""
    today = today_of(forecast)
    if today is None:
        return []
    listed = all_days(forecast)
    day = listed.get(today)
    if day is None:
        return []
    told = []
    yesterday = listed.get(today - timedelta(days=1))
    if day.high is not None and yesterday is not None and yesterday.high is not None:
        delta = day.high - yesterday.high
        if abs(delta) >= WARMER:
            told.append(f"{'warmer' if delta > 0 else 'colder'} than yesterday: high "
                        f"{_shown(day.high, unit)} (yesterday {_shown(yesterday.high, unit)})")
    before = all_days(previous).get(today) if previous else None
    if before is not None:
        told += _revisions(day, before, unit)
    return told


def _revisions(day: Day, before: Day, unit: Unit) -> list[str]:
    told = []
    if day.rain_chance is not None and before.rain_chance is not None:
        if day.rain_chance >= RAIN_LIKELY > before.rain_chance:
            told.append(f"rain now expected ({day.rain_chance}%, was {before.rain_chance}%)")
        elif before.rain_chance >= RAIN_LIKELY and day.rain_chance < RAIN_UNLIKELY:
            told.append(f"rain no longer expected ({day.rain_chance}%, was {before.rain_chance}%)")
    if day.high is not None and before.high is not None and abs(day.high - before.high) >= WARMER:
        told.append(f"high revised {'up' if day.high > before.high else 'down'} to {_shown(day.high, unit)} "
                    f"(was {_shown(before.high, unit)})")
    return told
