"""The journal's preferences, declared before the journal itself so that people and agents can
set them: the places whose weather a day's page shows, the unit, and when (at what local time,
on which days, in which time zone) the day's page is prepared.

Kept small and closed (unknown fields are refused): the journal domain reads
:data:`JOURNAL` typed, and grows it with new fields that have defaults, so stored values stay valid.
"""

from __future__ import annotations

from datetime import time
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from fable_core.tools.clock import TimeZoneName
from fable_core.tools.preferences import setting

__all__ = ["JOURNAL", "JournalPrefs", "Location", "Weekday"]

Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
_WEEK: tuple[Weekday, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


class Location(BaseModel):
    """A named place, for its weather."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=60)]
    lat: float = Field(ge=-90, le=90)
    lon: float = Field(ge=-180, le=180)


class JournalPrefs(BaseModel):
    """What the daily journal page shows and when it is prepared."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    locations: list[Location] = Field(default_factory=list, max_length=10)
    temperature_unit: Literal["celsius", "fahrenheit"] = "celsius"
    prep_time: time = Field(time(6, 0), description="Local time the day's page is prepared (HH:MM).")
    days: list[Weekday] = Field(default_factory=lambda: list(_WEEK), description="Days it is prepared on.")
    timezone: TimeZoneName | None = Field(None, description="Unset: your timezone setting.")

    @field_validator("locations")
    @classmethod
    def _distinct_names(cls, locations: list[Location]) -> list[Location]:
        seen: set[str] = set()
        for loc in locations:
            if loc.name.casefold() in seen:
                raise ValueError(f"each location needs its own name; {loc.name!r} is there twice (case aside)")
            seen.add(loc.name.casefold())
        return locations

    @field_validator("days")
    @classmethod
    def _week_order(cls, days: list[Weekday]) -> list[Weekday]:
        return [d for d in _WEEK if d in days]  # each once, Monday first


JOURNAL = setting("journal", JournalPrefs, JournalPrefs(),
                  "Daily journal: locations {name, lat, lon}, temperature_unit, prep_time HH:MM, days, timezone.")
