"""A fake weather service at the wire: Nominatim's ``/search?format=jsonv2`` and Open-Meteo's
``/v1/forecast``, answering from a script a test sets (places by query, a forecast), recording
every request it gets (path, query, User-Agent); ``delay`` holds each answer that long (a slow
service), ``status`` answers every request with that HTTP status instead (a failing one).

Run it with ``serve_in_thread(weather_app(state))``: it keeps answering while a test's loop
waits. Both services are one app; each Fable under test names its URL twice.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = ["FakeWeather", "daily", "forecast", "weather_app"]


def daily(today: date, highs: list[float], rain: list[int], *, lows: list[float] | None = None,
          codes: list[int] | None = None) -> dict[str, Any]:
    """Open-Meteo's ``daily`` block from yesterday (``past_days=1``): one value a day, yesterday first."""
    days = [today + timedelta(days=i - 1) for i in range(len(highs))]
    return {"time": [d.isoformat() for d in days], "weather_code": codes or [61 if r >= 50 else 2 for r in rain],
            "temperature_2m_max": highs, "temperature_2m_min": lows or [h - 8 for h in highs],
            "precipitation_probability_max": rain, "precipitation_sum": [round(r / 20, 1) for r in rain]}


def forecast(today: date, highs: list[float], rain: list[int], *, now: float = 5.0, **options: Any) -> dict[str, Any]:
    """A whole ``/v1/forecast`` answer as Open-Meteo sends it, today's current conditions at 08:00."""
    return {"latitude": 47.375, "longitude": 8.5, "generationtime_ms": 0.1, "utc_offset_seconds": 3600,
            "timezone": "Europe/Zurich", "timezone_abbreviation": "GMT+1", "elevation": 408.0,
            "current_units": {"time": "iso8601", "interval": "seconds", "temperature_2m": "°C",
                              "weather_code": "wmo code"},
            "current": {"time": f"{today.isoformat()}T08:00", "interval": 900, "temperature_2m": now,
                        "weather_code": 3},
            "daily_units": {"time": "iso8601", "temperature_2m_max": "°C"},
            "daily": daily(today, highs, rain, **options)}


@dataclass
class FakeWeather:
    places: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # Nominatim results by query
    forecast: dict[str, Any] | None = None
    delay: float = 0.0
    status: int = 200
    requests: list[dict[str, Any]] = field(default_factory=list)

    def reset(self) -> None:
        self.places.clear()
        self.forecast, self.delay, self.status = None, 0.0, 200
        self.requests.clear()

    def asked(self, path: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"] == path]


def weather_app(state: FakeWeather) -> Starlette:
    async def answer(request: Request, body: Any) -> Response:
        state.requests.append({"path": request.url.path, "query": dict(request.query_params),
                               "user_agent": request.headers.get("user-agent", "")})
        if state.delay:
            await asyncio.sleep(state.delay)
        if state.status != 200:
            return JSONResponse({"error": True, "reason": "scripted failure"}, status_code=state.status)
        return JSONResponse(body)

    async def search(request: Request) -> Response:
        if request.query_params.get("format") != "jsonv2":
            return JSONResponse({"error": "format must be jsonv2 here"}, status_code=400)
        return await answer(request, state.places.get(request.query_params.get("q", "").lower(), []))

    async def forecast_(request: Request) -> Response:
        q = request.query_params
        if not {"latitude", "longitude", "daily"} <= set(q) or q.get("timezone") != "auto":
            return JSONResponse({"error": True, "reason": "latitude, longitude, daily, timezone=auto"}, status_code=400)
        return await answer(request, state.forecast or forecast(date(2026, 12, 5), [8, 9, 10, 11], [10, 20, 30, 40]))

    return Starlette(routes=[Route("/search", search), Route("/v1/forecast", forecast_)])
