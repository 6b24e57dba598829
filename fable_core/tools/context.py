"""The per-call context the dispatcher injects into every tool that asks for it by type."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.caller import Caller
from fable_core.config import Settings
from fable_core.events import Event

__all__ = ["Context"]


@dataclass(slots=True)
class Context:
    """What a running tool may use: its caller, its transaction, settings and shared services.

    ``session`` is already inside the call's single transaction; tools never commit.
    ``services`` holds process-wide helpers a surface installed (an LLM provider, say), looked up
    by name so the core does not import them.
    """

    caller: Caller
    session: AsyncSession
    settings: Settings
    services: dict[str, Any] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)

    @property
    def user_id(self) -> int:
        return self.caller.user_id

    def emit(self, event: Event) -> None:
        """Queue an event; the dispatcher publishes it once the transaction has committed."""
        self.events.append(event)
