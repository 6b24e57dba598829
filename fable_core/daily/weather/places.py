"""``find_place``: places by name with their latitude and longitude (the weather service's
geocoder), for a journal location or a forecast by coordinates."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, StringConstraints

from fable_core.daily.weather.services import geocode
from fable_core.tools import Context, Route, tool


class PlaceView(BaseModel):
    name: str
    label: str
    lat: float
    lon: float


class PlaceList(BaseModel):
    items: list[PlaceView]


@tool(group="weather", title="Find a place", scope="read", transaction="phases", open_world=True,
      route=Route("GET", "/weather/places"))
async def find_place(
    ctx: Context, place: Annotated[str, StringConstraints(strip_whitespace=True, min_length=2, max_length=200)],
) -> PlaceList:
    """Find places by name: their lat/lon."""
    found = await geocode(ctx.settings, place)
    return PlaceList(items=[PlaceView(name=c.name, label=c.label, lat=c.lat, lon=c.lon) for c in found])
