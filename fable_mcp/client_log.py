"""Log messages to the MCP client (``notifications/message``), at the level it asked for.

Fable's own logs go to stderr and the ``app_logs`` table; these are the few facts a client can
act on, sent on the stream of the request they concern (logger ``"fable"``): a tool call that
failed (``warning`` when the caller's input or state was the cause, ``error`` when the server
was), and a ``debug`` line per tool call with its duration. Never a traceback.

Which levels a request gets depends on its protocol era:

- 2025 clients set a level per session with ``logging/setLevel``; it is kept on their
  connection, so two sessions hear different things. Before any ``setLevel`` a session gets
  ``warning`` and above (the spec lets the server choose; failures are worth hearing, per-call
  chatter is not).
- 2026-07-28 clients opt in per request through ``_meta`` (``io.modelcontextprotocol/logLevel``);
  without it they get nothing, as that protocol requires.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final, get_args

import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from fable_core.errors import FableError
from fable_mcp.identity import connection_of

__all__ = ["DEFAULT_LEVEL", "LEVELS", "LOGGER", "ClientLog", "relay", "set_level"]

LEVELS: Final[tuple[types.LoggingLevel, ...]] = get_args(types.LoggingLevel)  # RFC 5424, least severe first
DEFAULT_LEVEL: Final[types.LoggingLevel] = "warning"
LOGGER: Final = "fable"
_STATE_KEY: Final = "fable.log_level"


@contextmanager
def _deprecated_logging() -> Iterator[None]:
    """Silence the SDK's deprecation warning for logging: it marks the feature deprecated because
    2026-07-28 reworked it, and Fable still serves the 2025 clients that use it.

    The warning fires when the coroutine is created: hold only that (no await, hence no other
    task) inside this block.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        yield


def set_level(ctx: ServerRequestContext[Any, Any], level: types.LoggingLevel) -> None:
    """Remember a 2025 client's ``logging/setLevel`` for the rest of its session."""
    connection_of(ctx).state[_STATE_KEY] = level


def _threshold(ctx: ServerRequestContext[Any, Any]) -> types.LoggingLevel | None:
    """The least severe level this request may hear, or None for nothing at all."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        requested = (ctx.meta or {}).get(types.LOG_LEVEL_META_KEY)
        return requested if requested in LEVELS else None
    level: types.LoggingLevel = connection_of(ctx).state.get(_STATE_KEY, DEFAULT_LEVEL)
    return level


class ClientLog:
    """The log of one request, as its client will see it."""

    def __init__(self, ctx: ServerRequestContext[Any, Any] | None) -> None:
        self._ctx = ctx
        threshold = _threshold(ctx) if ctx is not None else None
        self._lowest = len(LEVELS) if threshold is None else LEVELS.index(threshold)

    def wants(self, level: types.LoggingLevel) -> bool:
        """Whether a message at ``level`` would be sent: skip building the ones that would not."""
        return LEVELS.index(level) >= self._lowest

    async def send(self, level: types.LoggingLevel, data: dict[str, Any]) -> None:
        """Send ``data`` at ``level`` on this request's stream, if the client wants that level."""
        if not self.wants(level) or self._ctx is None:
            return
        with _deprecated_logging():
            sending = self._ctx.session.send_log_message(
                level, data, logger=LOGGER, related_request_id=self._ctx.request_id
            )
        await sending

    async def tool_failed(self, tool: str, error: FableError) -> None:
        """A domain error is the caller's to fix (``warning``); a 5xx one is the server's (``error``)."""
        level: types.LoggingLevel = "error" if error.http_status >= 500 else "warning"
        await self.send(level, {"tool": tool, "type": error.type, "message": error.message})

    async def tool_called(self, tool: str, ok: bool, seconds: float) -> None:
        if self.wants("debug"):
            await self.send("debug", {"tool": tool, "ok": ok, "duration_ms": round(seconds * 1000, 1)})


async def relay(connection: Connection, params: types.LoggingMessageNotificationParams) -> None:
    """Pass on a log message a remote Fable sent the bridge (:mod:`fable_mcp.bridge`).

    The remote already applied the level: the bridge forwards ``logging/setLevel`` to it.
    """
    with _deprecated_logging():
        sending = connection.log(params.level, params.data, params.logger)
    await sending
