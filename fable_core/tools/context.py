"""The per-call context the dispatcher injects into every tool that asks for it by type."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.caller import Caller
from fable_core.config import Settings
from fable_core.events import Event

if TYPE_CHECKING:
    from fable_core.tools.dispatcher import Dispatcher

__all__ = ["Context"]


@dataclass(slots=True)
class Context:
    """What a running tool may use: its caller, its database session, settings and services.

    A ``call`` tool's ``session`` is open for the whole call (one transaction for a write tool);
    tools never commit. A ``phases`` tool has no session between its phases: it opens one with
    :meth:`transaction` or :meth:`reading` around each piece of database work and waits on
    remote services outside them, holding no connection. ``services`` holds process-wide helpers
    a surface installed (an LLM provider, say), looked up by name so the core does not import them.
    """

    caller: Caller
    settings: Settings
    services: dict[str, Any] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)  # committed: published after the call
    dispatcher: Dispatcher | None = None
    _session: AsyncSession | None = None
    _pending: list[Event] = field(default_factory=list)  # emitted, not yet committed

    @classmethod
    def within(cls, session: AsyncSession, caller: Caller, settings: Settings,
               services: dict[str, Any] | None = None, dispatcher: Dispatcher | None = None) -> Context:
        """A context whose work runs in ``session``, already open (a ``call`` tool's)."""
        return cls(caller=caller, settings=settings, services=services if services is not None else {},
                   dispatcher=dispatcher, _session=session)

    @property
    def user_id(self) -> int:
        return self.caller.user_id

    @property
    def session(self) -> AsyncSession:
        if self._session is None:
            raise RuntimeError("this tool runs in phases: open one with ctx.transaction() or ctx.reading()")
        return self._session

    def emit(self, event: Event) -> None:
        """Queue an event; it is published once the work that caused it has committed."""
        self._pending.append(event)

    def committed(self) -> None:
        """The work so far is committed: its events may be published."""
        self.events.extend(self._pending)
        self._pending.clear()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """A phase that writes: one transaction, committed when the block ends (the call's own
        session when one is already open, so nested work joins it)."""
        async with self._phase("write") as session:
            yield session

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[AsyncSession]:
        """A phase that only reads (or the open session, when there is one)."""
        async with self._phase("read") as session:
            yield session

    @asynccontextmanager
    async def _phase(self, kind: Literal["read", "write"]) -> AsyncIterator[AsyncSession]:
        if self._session is not None:
            yield self._session
            return
        assert self.dispatcher is not None, "a phase needs the dispatcher's database"
        try:
            async with self.dispatcher.session(kind) as session:
                self._session = session
                yield session
        except BaseException:
            self._pending.clear()
            raise
        finally:
            self._session = None
        self.committed()

    async def call(self, name: str, arguments: Mapping[str, Any]) -> BaseModel:
        """Run another tool as this caller, through the dispatcher: validated by that tool's
        own argument model and scope, its result checked. Inside an open session it joins it
        (one transaction with this call); between phases it is a call of its own."""
        assert self.dispatcher is not None, "calling a tool needs the dispatcher"
        return await self.dispatcher.run_within(self, name, arguments)
