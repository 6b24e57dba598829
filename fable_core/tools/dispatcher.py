"""The dispatcher: the one path every tool call takes, whatever the surface.

validate arguments → authorise → run in one transaction → validate the result → record usage →
publish events after commit. Errors leave as :mod:`fable_core.errors` types; nothing is written
when a call fails (its failure is logged in a transaction of its own).
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from sqlalchemy import insert, text
from sqlalchemy.exc import DBAPIError

from fable_core.caller import Caller
from fable_core.config import Settings
from fable_core.db.database import Database
from fable_core.db.errors import translate_db_error
from fable_core.db.models import AppLog
from fable_core.errors import FableError, Forbidden, InvalidInput, UnknownTool
from fable_core.events import EventBus
from fable_core.tools.context import Context
from fable_core.tools.registry import REGISTRY, Registry, Tool

__all__ = ["Dispatcher", "InternalError", "validation_problems"]

_log = logging.getLogger(__name__)
# A read tool's transaction writes nothing but its usage row; losing that row in a crash is
# harmless, so its commit need not wait for the WAL flush (the slowest part of a read call).
# One statement both relaxes the commit and inserts the row: a round trip fewer per read.
_READ_USAGE = text(
    "WITH async_commit AS (SELECT set_config('synchronous_commit', 'off', true)) "
    "INSERT INTO app_logs (category, user_id, username, action, surface, duration_ms) "
    "SELECT :category, CAST(:user_id AS integer), :username, :action, :surface, "
    "CAST(:duration_ms AS double precision) FROM async_commit"
)


class InternalError(FableError):
    """An unexpected failure inside a tool; the traceback stays in app_logs, never on the wire."""

    type = "internal_error"
    http_status = 500


def validation_problems(e: ValidationError) -> list[dict[str, Any]]:
    """Pydantic errors as compact, JSON-safe dicts: where, what, and the offending input."""
    problems = []
    for err in e.errors(include_url=False, include_context=False):
        problem = {"field": ".".join(str(p) for p in err["loc"]) or "(arguments)", "message": err["msg"]}
        if err["type"] != "missing":
            problem["input"] = repr(err.get("input"))[:200]
        problems.append(problem)
    return problems


class Dispatcher:
    """Runs registered tools for callers. One per process; surfaces share it."""

    def __init__(
        self,
        db: Database,
        settings: Settings,
        *,
        registry: Registry = REGISTRY,
        events: EventBus | None = None,
        services: dict[str, Any] | None = None,
    ) -> None:
        self.db = db
        self.settings = settings
        self.registry = registry
        self.events = events or EventBus()
        self.services: dict[str, Any] = services if services is not None else {}

    def tool(self, name: str) -> Tool:
        found = self.registry.get(name)
        if found is None:
            raise UnknownTool(f"no tool named {name!r}", name=name)
        return found

    async def call(self, name: str, arguments: Mapping[str, Any] | None, caller: Caller) -> dict[str, Any]:
        """Run tool ``name`` as ``caller``; return its result as JSON-ready data."""
        started = time.perf_counter()
        t = self.tool(name)
        try:
            args = self._validate(t, arguments, caller)
            result, events = await self._run(t, args, caller, started)
        except FableError as e:
            await self._log_failure(t.name, caller, started, e, None)
            raise
        except DBAPIError as e:
            err = translate_db_error(e)
            await self._log_failure(t.name, caller, started, err, None)
            raise err from e
        except Exception as e:
            _log.exception("tool %s failed", t.name)
            err = InternalError(f"{t.name} failed unexpectedly; the error was logged")
            await self._log_failure(t.name, caller, started, err, traceback.format_exc())
            raise err from e
        await self.events.publish(events)
        return result

    def _validate(self, t: Tool, arguments: Mapping[str, Any] | None, caller: Caller) -> dict[str, Any]:
        if arguments is not None and not isinstance(arguments, Mapping):
            raise InvalidInput(f"arguments of {t.name} must be an object", errors=[])
        try:
            model = t.signature.arguments.model_validate(dict(arguments or {}))
        except ValidationError as e:
            problems = validation_problems(e)
            summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
            raise InvalidInput(f"invalid arguments for {t.name}: {summary}", errors=problems) from e
        if not t.allows(caller):
            raise Forbidden(f"{t.name} changes data; this credential has read-only scope", tool=t.name)
        return {k: getattr(model, k) for k in type(model).model_fields}

    async def _run(
        self, t: Tool, args: dict[str, Any], caller: Caller, started: float
    ) -> tuple[dict[str, Any], list[Any]]:
        async with self.db.transaction() as session:
            ctx = Context(caller=caller, session=session, settings=self.settings, services=self.services)
            if t.signature.context_param:
                args[t.signature.context_param] = ctx
            raw = await t.fn(**args)
            try:
                result = t.signature.output.model_validate(raw, from_attributes=True)
            except ValidationError as e:
                raise InternalError(f"{t.name} produced an invalid result") from e
            usage = _usage(t.name, caller, started)
            if t.scope == "read":
                await session.execute(_READ_USAGE, usage)
            else:
                await session.execute(insert(AppLog), [usage])
        return result.model_dump(mode="json", exclude_none=False), ctx.events

    async def _log_failure(
        self, name: str, caller: Caller, started: float, err: FableError, tb: str | None
    ) -> None:
        row = _usage(name, caller, started)
        row.update(
            category="error" if tb else "usage",
            error_type=err.type,
            error_message=err.message[:2000],
            traceback=tb,
        )
        try:
            async with self.db.transaction() as session:
                await session.execute(insert(AppLog), [row])
        except Exception:  # the database itself may be what failed
            _log.warning("could not record failure of %s", name, exc_info=True)


def _usage(name: str, caller: Caller, started: float) -> dict[str, Any]:
    return {
        "category": "usage",
        "user_id": caller.user_id,
        "username": caller.username,
        "action": name,
        "surface": caller.surface,
        "duration_ms": round((time.perf_counter() - started) * 1000, 3),
    }
