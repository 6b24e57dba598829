"""The dispatcher: the one path every tool call takes, whatever the surface.

validate arguments → authorise → run (a write tool in one transaction, a read tool in a session
without one: on the read replica when there is one and it may answer, :mod:`fable_core.db.replica`)
→ validate the result → publish events after commit → record usage. Errors leave
as :mod:`fable_core.errors` types; nothing is written when a call fails. Usage and failure rows
go to ``app_logs`` in batches (:mod:`.usage`), outside the call's transaction.

A tool that waits on a remote service (``transaction="phases"``) gets no session from the
dispatcher: each of its phases takes a pool slot and a session of its own for just its database
work, so a slow model or site holds no connection and no slot while it thinks; each phase is
atomic, and a failure after a committed phase leaves that phase's work (and publishes its
events). A tool calls another through :meth:`Context.call`, validated and authorised as any call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import traceback
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.config import Settings
from fable_core.db.database import Database
from fable_core.db.replica import ReplicaFailed
from fable_core.errors import FableError, Forbidden, InvalidInput
from fable_core.infra.events import EventBus
from fable_core.tools.caller import Caller
from fable_core.tools.context import Context, ReadKind
from fable_core.tools.idempotency import Replayed, check_key, claim, fingerprint, finish, keep, kept
from fable_core.tools.progress import ProgressSink
from fable_core.tools.registry import REGISTRY, Registry, Tool
from fable_core.tools.suggest import argument_hint, unknown_tool
from fable_core.tools.toolsets import ToolChoice
from fable_core.tools.usage import UsageLog

if TYPE_CHECKING:
    from fable_core.tools.runtime import Runtime

__all__ = ["Dispatcher", "InternalError", "authorise", "check_arguments", "validation_problems"]

_log = logging.getLogger(__name__)


class InternalError(FableError):
    """An unexpected failure inside a tool; the traceback stays in app_logs, never on the wire."""

    type = "internal_error"
    http_status = 500


def check_arguments(t: Tool, arguments: Mapping[str, Any] | None, caller: Caller) -> dict[str, Any]:
    """``arguments`` validated by ``t``'s argument model once ``caller`` may run ``t`` at all: the
    dispatcher's first steps, for surfaces that run a tool's work their own way (a stream). Who
    asks is checked first, so a caller refused learns nothing from the arguments' errors."""
    authorise(t, caller)
    if arguments is not None and not isinstance(arguments, Mapping):
        raise InvalidInput(f"arguments of {t.name} must be an object", errors=[])
    try:
        model = t.signature.arguments.model_validate(dict(arguments or {}))
    except ValidationError as e:
        problems = validation_problems(e, t.input_schema)
        summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
        raise InvalidInput(f"invalid arguments for {t.name}: {summary}", errors=problems) from e
    return {k: getattr(model, k) for k in type(model).model_fields}


def authorise(t: Tool, caller: Caller) -> None:
    """Forbidden unless ``caller`` may run ``t``: a session-only tool says so to any other
    credential first (an API key is refused for what it is, whoever holds it), then the role,
    then the scope."""
    if t.allows(caller):
        return
    if t.credentials == "session" and not caller.in_person:
        raise Forbidden(f"{t.name} runs only in a signed-in session or from the operator's command line, "
                        "never with an API key, an OAuth token or through the assistant", tool=t.name,
                        reason="session_only")
    if t.admin and not caller.is_admin:
        raise Forbidden(f"only an admin may do this; {t.name} is for admins", tool=t.name, role=caller.role)
    raise Forbidden(f"{t.name} changes data; this credential has read-only scope", tool=t.name)


def validation_problems(e: ValidationError, schema: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Pydantic errors as compact, JSON-safe dicts: where, what, and the offending input. With
    the arguments' ``schema``, an unknown argument's message names the close ones
    (``did_you_mean``) or else the arguments there are."""
    problems: list[dict[str, Any]] = []
    for err in e.errors(include_url=False, include_context=False):
        problem: dict[str, Any] = {"field": ".".join(str(p) for p in err["loc"]) or "(arguments)",
                                   "message": err["msg"]}
        if err["type"] != "missing":
            problem["input"] = repr(err.get("input"))[:200]
        if err["type"] == "extra_forbidden" and schema is not None:
            matches, words = argument_hint(schema, err["loc"])
            problem["message"] += words
            if matches:
                problem["did_you_mean"] = matches
        problems.append(problem)
    return problems


@dataclass(frozen=True, slots=True)
class _Once:
    """A write call's idempotency key, what a repeat must match, and whose key it is."""

    key: str
    print: str
    user_id: int


class Dispatcher:
    """Runs registered tools for callers. One per process; surfaces share it."""

    def __init__(
        self,
        db: Database,
        settings: Settings,
        *,
        registry: Registry = REGISTRY,
        events: EventBus | None = None,
        runtime: Runtime | None = None,
        usage: UsageLog | None = None,
    ) -> None:
        self.db = db
        self.settings = settings
        self.registry = registry
        self.events = events or EventBus()
        self.runtime = runtime
        self.usage = usage or UsageLog(db)
        # At most as many calls in the database as the pool has connections: more would open
        # overflow connections that are closed again on return, and a new connection costs more
        # (connect, and re-preparing every statement) than waiting a moment for a pooled one.
        # Other users of the pool (auth lookups, usage flushes, the assistant) keep the overflow.
        self._slots = asyncio.Semaphore(settings.fable_db_pool_size)

    def tool(self, name: str, caller: Caller | None = None) -> Tool:
        """The tool called ``name``; UnknownTool names the closest ones ``caller`` may run."""
        found = self.registry.get(name)
        if found is None:
            usable = self.registry if caller is None else self.registry.for_caller(caller)
            raise unknown_tool(name, (t.name for t in usable))
        return found

    async def call(self, name: str, arguments: Mapping[str, Any] | None, caller: Caller, *,
                   progress: ProgressSink | None = None) -> dict[str, Any]:
        """Run tool ``name`` as ``caller``; return its result as JSON-ready data."""
        return (await self.run(name, arguments, caller, progress=progress)).model_dump(mode="json")

    async def run(self, name: str, arguments: Mapping[str, Any] | None, caller: Caller, *,
                  progress: ProgressSink | None = None, choice: ToolChoice | None = None,
                  idempotency_key: str | None = None) -> BaseModel:
        """Run tool ``name`` as ``caller``; return its validated result model. A streaming
        tool's progress goes to ``progress`` as it comes. Given a client's ``choice`` of tools
        (an MCP session's), a tool it does not offer is refused, naming how to have it offered.
        With an ``idempotency_key``, a write already run with it answers as it did then and
        writes nothing (:mod:`.idempotency`).

        Surfaces that write JSON (REST) serialise the model directly, which is much faster
        than building the dict of :meth:`call` and encoding that.
        """
        started = time.perf_counter()
        t = self.tool(name, caller)
        try:
            if choice is not None and t.allows(caller):  # else refused below, saying why
                choice.require(t)
            args = check_arguments(t, arguments, caller)
            once = None
            if idempotency_key is not None and t.scope == "write" and not t.stream:
                once = _Once(check_key(idempotency_key), fingerprint(t.name, arguments), caller.user_id)
            result, events = await self._run(t, args, caller, progress, choice, once)
        except FableError as e:  # database errors included: Database translates them
            self._log_failure(t.name, caller, started, e, None)
            raise
        except Exception as e:
            _log.exception("tool %s failed", t.name)
            err = InternalError(f"{t.name} failed unexpectedly; the error was logged")
            self._log_failure(t.name, caller, started, err, traceback.format_exc())
            raise err from e
        self.usage.record(_usage(t.name, caller, started))
        await self.events.publish(events)
        return result

    async def _run(self, t: Tool, args: dict[str, Any], caller: Caller, progress: ProgressSink | None = None,
                   choice: ToolChoice | None = None, once: _Once | None = None) -> tuple[BaseModel, list[Any]]:
        # the replica takes the reads of read tools called for a person; not background work's,
        # nor live streams' (following rows background work wrote a moment ago, told by NOTIFY)
        replica = t.scope == "read" and not t.stream and caller.surface != "internal"
        reads: ReadKind = "replica" if replica else "read"
        ctx = Context(caller=caller, settings=self.settings, runtime=self.runtime, dispatcher=self,
                      progress_sink=progress, reads=reads, choice=choice)
        if once is not None and (replay := await self._kept(t, once)) is not None:
            return replay, []
        if t.transaction == "phases":
            if once is not None:  # claimed with its first write, kept as it finishes (:mod:`.idempotency`)
                ctx._first_write = lambda session: _claim(session, t, once)
            try:
                result = await self._call(t, args, ctx)
            except Replayed:  # another call with the key claimed it first: its answer, or Conflict while it runs
                replay = await self._kept(t, once)
                assert replay is not None
                return replay, []
            except BaseException:
                await self.events.publish(ctx.events)  # what its committed phases changed
                raise
            if once is not None:
                await finish(self.db, once.user_id, once.key, t.name, once.print, result.model_dump(mode="json"))
            return result, ctx.events
        try:
            async with self.session("write" if t.scope == "write" else reads, caller) as session:
                ctx._session = session
                result = await self._call(t, args, ctx)
                if once is not None:
                    await _keep(session, t, once, result)
        except Replayed:
            replay = await self._kept(t, once)
            assert replay is not None
            return replay, []
        except ReplicaFailed:  # the replica failed mid-read: the read again, on the primary (it changed nothing)
            ctx = Context(caller=caller, settings=self.settings, runtime=self.runtime, dispatcher=self,
                          progress_sink=progress)
            async with self.session("read") as session:
                ctx._session = session
                result = await self._call(t, args, ctx)
        ctx.committed()
        return result, ctx.events

    async def _kept(self, t: Tool, once: _Once | None) -> BaseModel | None:
        """The result kept for ``once``'s key, as ``t``'s result model (None if none)."""
        if once is None:
            return None
        async with self.session("read") as session:
            stored = await kept(session, once.user_id, once.key, t.name, once.print)
        return None if stored is None else t.signature.output.model_validate(stored)

    async def _call(self, t: Tool, args: dict[str, Any], ctx: Context) -> BaseModel:
        if t.signature.context_param:
            args[t.signature.context_param] = ctx
        raw = await t.fn(**args)
        try:
            return t.signature.output.model_validate(raw, from_attributes=True)
        except ValidationError as e:
            raise InternalError(f"{t.name} produced an invalid result") from e

    @asynccontextmanager
    async def session(self, kind: Literal["read", "replica", "write", "snapshot"],
                      caller: Caller | None = None) -> AsyncIterator[AsyncSession]:
        """A database session for one call or phase, inside one of the pool's slots: a write
        session is one transaction (which marks ``caller`` as having written, for the read
        replica); a read session has no BEGIN/COMMIT; a ``replica`` one is a read session on the
        read replica when ``caller`` may read there now (:meth:`Database.replica_reading`)."""
        writer = caller.user_id if caller is not None else None
        if kind == "write":
            opened = self.db.transaction(writer=writer)
        elif kind == "snapshot":
            opened = self.db.snapshot()
        elif kind == "replica" and writer is not None:
            opened = self.db.replica_reading(writer)
        else:
            opened = self.db.reading()
        async with self._slots, opened as session:
            yield session

    async def rehearse(self, name: str, arguments: Mapping[str, Any] | None, caller: Caller) -> Tool:
        """Run tool ``name`` as :meth:`run` would, then roll all of it back: its error if it would
        fail (validation, access, its own rules), nothing changed and nothing told either way.
        What asks a person before it runs (the assistant's ``confirm`` tools) asks only about a
        call that would work. A ``phases`` tool (its phases commit, and it reaches outside) is
        only validated."""
        t = self.tool(name, caller)
        args = check_arguments(t, arguments, caller)
        if t.transaction == "phases":
            return t
        ctx = Context(caller=caller, settings=self.settings, runtime=self.runtime, dispatcher=self)
        with contextlib.suppress(_Rehearsed):
            async with self.session("write", caller) as session:
                ctx._session = session
                await self._call(t, args, ctx)
                raise _Rehearsed  # the transaction rolls back; its events are never published
        return t

    async def run_within(self, outer: Context, name: str, arguments: Mapping[str, Any]) -> BaseModel:
        """A tool calling a tool: validated and authorised as any call, as the same caller; inside
        ``outer``'s open session (its events join the outer call's), else a call of its own."""
        if outer._session is None:
            return await self.run(name, arguments, outer.caller)
        started = time.perf_counter()
        t = self.tool(name, outer.caller)
        args = check_arguments(t, arguments, outer.caller)
        inner = Context(caller=outer.caller, settings=self.settings, runtime=self.runtime,
                        dispatcher=self, _session=outer._session, _pending=outer._pending)
        result = await self._call(t, args, inner)
        self.usage.record(_usage(t.name, outer.caller, started))
        return result

    def _log_failure(self, name: str, caller: Caller, started: float, err: FableError, tb: str | None) -> None:
        row = _usage(name, caller, started)
        row.update(
            category="error" if tb else "usage",
            error_type=err.type,
            error_message=err.message[:2000],
            traceback=tb,
        )
        self.usage.record(row)


class _Rehearsed(Exception):
    """Ends a rehearsal's transaction (:meth:`Dispatcher.rehearse`)."""


async def _claim(session: AsyncSession, t: Tool, once: _Once) -> None:
    """Claim ``once``'s key in a call's first write phase; Replayed (rolling the phase back) when
    another call holds it."""
    if not await claim(session, once.user_id, once.key, t.name, once.print):
        raise Replayed


async def _keep(session: AsyncSession, t: Tool, once: _Once, result: BaseModel) -> None:
    """Keep ``result`` under ``once``'s key in the call's transaction; Replayed (rolling the call
    back) when another call with the key committed first."""
    if not await keep(session, once.user_id, once.key, t.name, once.print, result.model_dump(mode="json")):
        raise Replayed


def _usage(name: str, caller: Caller, started: float) -> dict[str, Any]:
    return {
        "created_at": datetime.now(UTC),  # the call's time, not the batch's
        "category": "usage",
        "user_id": None if caller.operator else caller.user_id,
        "username": caller.username,
        "action": name,
        "surface": caller.surface,
        "duration_ms": round((time.perf_counter() - started) * 1000, 3),
        "error_type": None,
        "error_message": None,
        "traceback": None,
    }
