"""What a day's morning note is made of: sections gathered by the domains that own the data.

The morning prep asks every registered section for its part of one day (a user, a date, that
day's bounds in the user's zone) and then writes the opener from the parts: an LLM turns them
into prose, or, with no model, each section's ``render`` writes its lines. A domain registers its
section next to its tools (the calendar its events, the weather its forecasts), so the journal
imports no domain and a new domain joins the morning note without touching it:

    @section("events", order=20, render=render_events, title="Today")
    async def todays_events(session: AsyncSession, caller: Caller, day: PrepDay) -> list[dict] | None: ...

A gather returns JSON-ready data (what the LLM is shown, compact: no nulls), or ``None`` / an empty
value when it has nothing to say that day (the section is then left out). It runs inside the
prep's read-only session, as ``caller`` (the day's user, so access rules hold), and must be
fast: the whole gather has a budget of 100 ms at 100k notes. A gather that raises is logged and
left out of that day's note; it never stops the others.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Any, TypeVar
from zoneinfo import ZoneInfo

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from fable_core.people.preferences.journal import JournalPrefs
    from fable_core.tools.caller import Caller

__all__ = ["SECTIONS", "PrepDay", "Section", "section", "sections"]

Gather = Callable[["AsyncSession", "Caller", "PrepDay"], Awaitable[Any]]
Render = Callable[[Any], str]
G = TypeVar("G", bound=Gather)


@dataclass(frozen=True, slots=True)
class PrepDay:
    """The day being prepared, in the user's zone; ``start``/``end`` are its bounds (aware, UTC)."""

    user_id: int
    day: date
    zone: ZoneInfo
    start: datetime
    end: datetime
    prefs: JournalPrefs


@dataclass(frozen=True, slots=True)
class Section:
    name: str
    order: int  # place in the note: lower first
    gather: Gather
    render: Render  # the section's lines of the structured opener (no LLM), Markdown
    title: str | None = None  # its heading in the structured opener (else ``render`` writes its own)


SECTIONS: dict[str, Section] = {}


def section(name: str, *, order: int, render: Render, title: str | None = None) -> Callable[[G], G]:
    """Register ``gather`` as the morning note's section ``name`` (headed ``title`` in the
    structured opener); refuses a name taken twice."""

    def register(gather: G) -> G:
        if name in SECTIONS:
            raise ValueError(f"morning-note section {name!r} is registered twice")
        SECTIONS[name] = Section(name, order, gather, render, title)
        return gather

    return register


def sections() -> list[Section]:
    """The registered sections in note order."""
    return sorted(SECTIONS.values(), key=lambda s: (s.order, s.name))
