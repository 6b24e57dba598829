"""What the calendar tools return: compact (no nulls, no empty fields), times in the caller's zone.

Timed starts and ends read '2026-12-07T09:00+01:00', all-day ones '2026-12-07' (end exclusive).
An occurrence of a recurring event carries ``occurrence``, its original start: with
``event_id``, what names it to change or delete it alone.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from fable_core.tools.results import absent_when_none

__all__ = ["EventDeleted", "EventItem", "EventPage", "EventView"]


def _absent_when_empty(description: str | None = None) -> Any:
    return Field("", exclude_if=_empty, description=description)


def _empty(value: object) -> bool:
    return not value


class EventItem(BaseModel):
    """One occurrence in a range."""

    event_id: int
    title: str
    start: str
    end: str
    all_day: bool = Field(False, exclude_if=_empty)
    occurrence: str | None = absent_when_none("Original start of this occurrence of a recurring event.")
    location: str = _absent_when_empty()
    color: str | None = absent_when_none()
    note_id: int | None = absent_when_none()
    project_id: int | None = absent_when_none()


class EventPage(BaseModel):
    items: list[EventItem]
    next_cursor: str | None = absent_when_none()


class EventView(BaseModel):
    """An event (a series: its first occurrence), or one occurrence changed alone (``occurrence``)."""

    id: int
    title: str
    start: str
    end: str
    all_day: bool = Field(False, exclude_if=_empty)
    timezone: str | None = absent_when_none("The zone a timed event was made in, where it recurs.")
    occurrence: str | None = absent_when_none("The occurrence this changed alone (its original start).")
    rrule: str | None = absent_when_none()
    exdates: list[str] = Field(default_factory=list, exclude_if=_empty, description="Deleted occurrences.")
    changed: list[str] = Field(default_factory=list, exclude_if=_empty,
                               description="Occurrences changed alone (original starts).")
    description: str = _absent_when_empty()
    location: str = _absent_when_empty()
    color: str | None = absent_when_none()
    note_id: int | None = absent_when_none()
    project_id: int | None = absent_when_none()


class EventDeleted(BaseModel):
    id: int
    occurrence: str | None = absent_when_none("The one occurrence deleted, when only one was.")
    deleted: bool = True
