"""The kernel's view of a running Fable: settings, database, registry, dispatcher and events,
and the parts capabilities install when it opens.

A domain that needs what another capability installed (the model provider, the assistant, the
query embedder) asks for it by a typed key the owning domain declares,
``fable.part(ASSISTANT)``, rather than by an attribute the kernel would have to know the type of:
so the kernel names no domain, and no domain needs the frame (:class:`fable_core.runtime.Fable`)
that assembles them all. A part is None while its capability is not configured
(``LLM_PROVIDER=none``); every tool that does not need it works without it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar, cast

from fable_core.config import Settings
from fable_core.db.database import Database
from fable_core.infra.changes import ChangeFeed
from fable_core.infra.events import EventBus
from fable_core.infra.loopwatch import LoopWatch
from fable_core.tools.availability import Availability
from fable_core.tools.caller import Caller
from fable_core.tools.dispatcher import Dispatcher
from fable_core.tools.registry import REGISTRY, Registry

__all__ = ["Closer", "Part", "Runtime"]

T = TypeVar("T")
Closer = Callable[[], Awaitable[None]]
"""What a capability's install hook returns: run once when Fable closes."""


class Part(Generic[T]):
    """The key of a part a capability installs on the runtime: ``LLM = Part[Provider]("llm")``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Part({self.name!r})"


class Runtime:
    """What every domain may use of a running Fable (see the module docstring)."""

    def __init__(self, settings: Settings, db: Database, registry: Registry = REGISTRY, *,
                 jobs: bool = False) -> None:
        self.settings = settings
        self.db = db
        self.registry = registry
        self.events = EventBus()
        self.changes = ChangeFeed(db, self.events)  # the same events, to and from other processes
        self.availability = Availability()  # optional services answering now (tools' ``needs``)
        self.dispatcher = Dispatcher(db, settings, registry=registry, events=self.events, runtime=self)
        self.runs_jobs = jobs  # whether this process runs the background jobs
        self.loop_watch = LoopWatch()  # how late the event loop runs (/api/health)
        self._parts: dict[str, Any] = {}

    def part(self, key: Part[T]) -> T | None:
        """The part installed under ``key``, or None."""
        return cast("T | None", self._parts.get(key.name))

    def required(self, key: Part[T]) -> T:
        """The part installed under ``key``, which every runtime of this kind has (the frame
        installs it when it is made); RuntimeError when it is missing."""
        value = self.part(key)
        if value is None:
            raise RuntimeError(f"this runtime has no {key.name}")
        return value

    def install(self, key: Part[T], value: T | None) -> None:
        """Put (or with None, remove) the part under ``key``."""
        if value is None:
            self._parts.pop(key.name, None)
        else:
            self._parts[key.name] = value

    async def call(self, name: str, arguments: dict[str, Any] | None, caller: Caller) -> dict[str, Any]:
        return await self.dispatcher.call(name, arguments, caller)
