"""The request log: one ``app_logs`` row (category ``request``) per /api and /mcp request, with
its method, route template, status, duration and user; and one ``error`` row, with the
traceback, per request that failed unexpectedly.

The route is the template it matched (``/api/notes/{note_id}``), never the raw path: ids and
names in paths are not collected, and rows group by endpoint. A path nothing matched is logged
as the fallback's template (``/api/{rest}``). The user is the one the handler authenticated
(:func:`note_user`); a request that never authenticated has none.

Cheap by construction: a pure ASGI middleware that notes the time, the status and, when the
response ends, hands a dict to the dispatcher's :class:`~fable_core.tools.usage.UsageLog`, which
writes rows in batches outside any request's transaction (see ``bench/logs.py``).
"""

from __future__ import annotations

import time
import traceback
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fable_core.tools.caller import Caller
from fable_core.tools.usage import UsageLog
from fable_mcp.identity import CALLER_SCOPE_KEY

__all__ = ["RequestLog", "note_user", "record_error"]

USER_SCOPE_KEY = "fable.user"
_PREFIXES = ("/api/", "/mcp")
_SKIP = frozenset({"/api/health"})


def note_user(request: Request, user_id: int, username: str | None) -> None:
    """Name the request's user in its log row (the authenticator calls this)."""
    request.scope[USER_SCOPE_KEY] = (user_id, username)


def _user(scope: Scope) -> tuple[int | None, str | None]:
    noted = scope.get(USER_SCOPE_KEY)
    if noted is not None:
        return noted  # type: ignore[no-any-return]
    caller = scope.get(CALLER_SCOPE_KEY)
    if isinstance(caller, Caller):
        return caller.user_id, caller.username
    return None, None


def route_of(scope: Scope) -> str:
    """The template of the route the request matched, else its path."""
    path = getattr(scope.get("route"), "path", None)
    if isinstance(path, str) and path not in ("", "/"):
        return path.replace(":int}", "}").replace(":path}", "}")
    return str(scope.get("path", ""))


class RequestLog:
    """Pure ASGI middleware: one usage-log row per /api and /mcp request."""

    def __init__(self, app: ASGIApp, usage: UsageLog, enabled: bool = True) -> None:
        self.app = app
        self.usage = usage
        self.enabled = enabled

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if not self.enabled or scope["type"] != "http" or not path.startswith(_PREFIXES) or path in _SKIP:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # if the app raises before answering

        async def send_noting(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_noting)
        finally:
            user_id, username = _user(scope)
            self.usage.record({
                "created_at": datetime.now(UTC), "category": "request", "user_id": user_id, "username": username,
                "action": route_of(scope), "surface": "mcp" if path.startswith("/mcp") else "rest",
                "method": scope.get("method"), "endpoint": route_of(scope), "status_code": status,
                "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            })


def record_error(request: Request, usage: UsageLog, exc: BaseException) -> None:
    """An ``error`` row with the traceback of an exception no handler expected."""
    user_id, username = _user(request.scope)
    row: dict[str, Any] = {
        "created_at": datetime.now(UTC), "category": "error", "user_id": user_id, "username": username,
        "action": route_of(request.scope), "surface": "mcp" if request.url.path.startswith("/mcp") else "rest",
        "method": request.method, "endpoint": route_of(request.scope), "status_code": 500,
        "error_type": type(exc).__name__, "error_message": str(exc)[:2000],
        "traceback": "".join(traceback.format_exception(exc)),
    }
    usage.record(row)
