"""In-process notifications of committed changes, for surfaces that push updates.

Tools call ``ctx.emit(NoteChanged(...))``; the dispatcher publishes the events only after the
transaction commits, so a subscriber never hears of a change that was rolled back. The MCP
surface turns them into ``notifications/resources/updated``; the assistant into re-embedding.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

__all__ = ["Event", "EventBus", "NoteChanged", "ProjectChanged", "Subscriber"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class NoteChanged:
    user_id: int
    note_id: int
    kind: Literal["created", "updated", "deleted"]


@dataclass(frozen=True, slots=True)
class ProjectChanged:
    user_id: int
    project_id: int
    kind: Literal["created", "updated", "deleted"]


Event = NoteChanged | ProjectChanged
Subscriber = Callable[[Event], Awaitable[None] | None]


class EventBus:
    """Fan-out of committed events to subscribers; a failing subscriber never fails the call."""

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Register ``fn``; returns a function that unsubscribes it."""
        self._subscribers.append(fn)
        return lambda: self._subscribers.remove(fn) if fn in self._subscribers else None

    async def publish(self, events: list[Event]) -> None:
        for event in events:
            for fn in list(self._subscribers):
                try:
                    result = fn(event)
                    if result is not None:
                        await result
                except Exception:  # noqa: BLE001 - one failing subscriber must not stop the others
                    _log.exception("event subscriber %r failed on %r", fn, event)
