"""The two remote weather services, one small client each: Nominatim (a place's name to
coordinates) and Open-Meteo (coordinates to a forecast).

Their base URLs are the operator's (``FABLE_NOMINATIM_URL``, ``FABLE_OPEN_METEO_URL``), never a
user's, so no SSRF guard applies. Every request carries a User-Agent naming Fable (Nominatim's
usage policy asks for one) and has ``FABLE_WEATHER_TIMEOUT`` seconds in all, connection to last
byte: a slow or dead service costs the one call waiting on it that long, and nothing else (the
tools wait on it holding no database connection). Any failure is :class:`Unavailable`, saying
which service failed and how.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import httpx

from fable_core.config import Settings
from fable_core.errors import NotFound, Unavailable

__all__ = ["FORECAST_DAYS", "Candidate", "fetch_forecast", "geocode", "user_agent"]

FORECAST_DAYS = 3  # today and the two days after; yesterday comes too (``past_days=1``)
_DAILY = ("weather_code", "temperature_2m_max", "temperature_2m_min", "precipitation_probability_max",
          "precipitation_sum")
_CURRENT = ("temperature_2m", "weather_code")


@dataclass(frozen=True, slots=True)
class Candidate:
    name: str
    label: str
    lat: float
    lon: float


def user_agent(settings: Settings) -> str:
    """``Fable/<version> (<this Fable's URL>)``: who asks, as Nominatim's policy wants it said."""
    try:
        version = metadata.version("fable")
    except metadata.PackageNotFoundError:
        version = "dev"
    return f"Fable/{version} ({settings.fable_base_url or 'self-hosted Fable'})"


async def geocode(settings: Settings, place: str, *, limit: int = 5) -> list[Candidate]:
    """Places named ``place``, best first; NotFound when there is none."""
    found = await _get(settings, "Nominatim", settings.fable_nominatim_url, "/search",
                       {"q": place, "format": "jsonv2", "limit": limit})
    if not isinstance(found, list):
        raise Unavailable("Nominatim answered something that is not a list of places", service="nominatim")
    candidates = []
    for item in found:
        try:
            label = str(item.get("display_name") or item["name"])
            name = str(item.get("name") or label.split(",")[0]).strip() or label
            candidates.append(Candidate(name[:60], label[:300], round(float(item["lat"]), 5),
                                        round(float(item["lon"]), 5)))
        except (KeyError, TypeError, ValueError, AttributeError):
            continue  # a result without coordinates is no use
    if not candidates:
        raise NotFound(f"no place called {place!r} was found; try a fuller name (a town and its country)",
                       place=place)
    return candidates


async def fetch_forecast(settings: Settings, lat: float, lon: float) -> dict[str, Any]:
    """Open-Meteo's forecast for a point, in °C, days in the point's own time zone: what is kept
    of it (``timezone``, ``current``, ``daily``)."""
    body = await _get(settings, "Open-Meteo", settings.fable_open_meteo_url, "/v1/forecast", {
        "latitude": lat, "longitude": lon, "current": ",".join(_CURRENT), "daily": ",".join(_DAILY),
        "timezone": "auto", "past_days": 1, "forecast_days": FORECAST_DAYS, "temperature_unit": "celsius"})
    daily = body.get("daily") if isinstance(body, dict) else None
    if not isinstance(daily, dict) or not isinstance(daily.get("time"), list) or not daily["time"]:
        raise Unavailable("Open-Meteo answered without a daily forecast", service="open-meteo")
    kept = {"timezone": body.get("timezone") or "UTC",
            "daily": {k: daily.get(k) for k in ("time", *_DAILY) if isinstance(daily.get(k), list)}}
    if isinstance(body.get("current"), dict):
        kept["current"] = {k: body["current"].get(k) for k in ("time", *_CURRENT)}
    return kept


async def _get(settings: Settings, service: str, base: str, path: str, params: dict[str, Any]) -> Any:
    seconds = settings.fable_weather_timeout
    timeout = httpx.Timeout(seconds, connect=min(seconds, 3.0))
    try:
        async with asyncio.timeout(seconds), httpx.AsyncClient(
                timeout=timeout, headers={"User-Agent": user_agent(settings)}) as client:
            response = await client.get(base.rstrip("/") + path, params=params)
    except TimeoutError as e:
        raise Unavailable(f"{service} did not answer within {seconds:g} s; try again later",
                          service=service.lower()) from e
    except httpx.HTTPError as e:
        raise Unavailable(f"{service} could not be reached ({type(e).__name__}); try again later",
                          service=service.lower()) from e
    if response.status_code != 200:
        raise Unavailable(f"{service} answered HTTP {response.status_code}; try again later",
                          service=service.lower(), status=response.status_code)
    try:
        return response.json()
    except ValueError as e:
        raise Unavailable(f"{service} answered something that is not JSON", service=service.lower()) from e
