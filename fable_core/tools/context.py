"""The per-call context the dispatcher injects into every tool that asks for it by type."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.config import Settings
from fable_core.infra.events import Event
from fable_core.tools.caller import Caller
from fable_core.tools.progress import Progress, ProgressSink

if TYPE_CHECKING:
    from fable_core.tools.dispatcher import Dispatcher
    from fable_core.tools.runtime import Runtime
    from fable_core.tools.toolsets import ToolChoice

__all__ = ["Context", "ReadKind"]

ReadKind = Literal["read", "replica"]  # where a call's reads go: the primary, or the replica when it may


@dataclass(slots=True)
class Context:
    """What a running tool may use: its caller, its database session, settings and the runtime.

    A ``call`` tool's ``session`` is open for the whole call (one transaction for a write tool);
    tools never commit. A ``phases`` tool has no session between its phases: it opens one with
    :meth:`transaction` or :meth:`reading` around each piece of database work and waits on
    remote services outside them, holding no connection. ``runtime`` is the running
    :class:`~fable_core.runtime.Fable`, whose typed attributes hold what capabilities installed
    (the model provider, the embedder, the assistant).
    """

    caller: Caller
    settings: Settings
    runtime: Runtime | None = None
    events: list[Event] = field(default_factory=list)  # committed: published after the call
    dispatcher: Dispatcher | None = None
    progress_sink: ProgressSink | None = None
    reads: ReadKind = "read"  # "replica" for a read-scope tool's call made for a person
    choice: ToolChoice | None = None  # the tools an MCP session is offered (fable_core.tools.toolsets)
    _session: AsyncSession | None = None
    _pending: list[Event] = field(default_factory=list)  # emitted, not yet committed
    # run in the first write phase's transaction (a call in phases claiming its idempotency key)
    _first_write: Callable[[AsyncSession], Awaitable[None]] | None = None
    _today: tuple[date, str] | None = None

    @classmethod
    def within(cls, session: AsyncSession, caller: Caller, settings: Settings, runtime: Runtime | None = None,
               dispatcher: Dispatcher | None = None) -> Context:
        """A context whose work runs in ``session``, already open (a ``call`` tool's)."""
        return cls(caller=caller, settings=settings, runtime=runtime, dispatcher=dispatcher, _session=session)

    @property
    def fable(self) -> Runtime:
        """The runtime (always there when the dispatcher runs the tool)."""
        assert self.runtime is not None, "this context has no runtime"
        return self.runtime

    @property
    def user_id(self) -> int:
        return self.caller.user_id

    @property
    def session(self) -> AsyncSession:
        if self._session is None:
            raise RuntimeError("this tool runs in phases: open one with ctx.transaction() or ctx.reading()")
        return self._session

    async def progress(
        self, event: str, data: dict[str, Any], *, id: str | None = None,  # noqa: A002  SSE's field name
    ) -> None:
        """Report progress of a streaming tool; nothing happens when the caller asked for none."""
        if self.progress_sink is not None:
            await self.progress_sink(Progress(event, data, id))

    async def today(self) -> date:
        """Today in the caller's time zone (their ``timezone`` setting, else UTC): what "today",
        "overdue" and "due tomorrow" mean for them. Looked up once per call."""
        return (await self._clock())[0]

    async def timezone(self) -> str:
        """The IANA time zone :meth:`today` was computed in."""
        return (await self._clock())[1]

    async def _clock(self) -> tuple[date, str]:
        if self._today is None:
            from fable_core.tools.clock import user_today

            async with self.reading() as session:
                self._today = await user_today(session, self.caller)
        return self._today

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
    async def snapshot(self) -> AsyncIterator[AsyncSession]:
        """A phase that reads the whole database as of one moment (a backup's:
        :meth:`~fable_core.db.database.Database.snapshot`), or the open session, when there is one."""
        async with self._phase("snapshot") as session:
            yield session

    @asynccontextmanager
    async def _phase(self, kind: Literal["read", "write", "snapshot"]) -> AsyncIterator[AsyncSession]:
        if self._session is not None:
            yield self._session
            return
        assert self.dispatcher is not None, "a phase needs the dispatcher's database"
        first = self._first_write if kind == "write" else None
        try:
            async with self.dispatcher.session(self.reads if kind == "read" else kind, self.caller) as session:
                self._session = session
                if first is not None:
                    self._first_write = None
                    await first(session)
                yield session
        except BaseException:
            self._pending.clear()
            if first is not None:  # rolled back with the phase: the next write phase claims
                self._first_write = first
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
