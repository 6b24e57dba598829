"""Each MCP client's :class:`~fable_core.tools.toolsets.ToolChoice`, and telling it when it changed.

A 2025-11-25 client has a session (its connection): the choice lives as long as it, and a
change goes out as ``notifications/tools/list_changed`` on it. A 2026-07-28 client has no
session: its choice is its credential's (an API key's, an OAuth token's; the local user's over
stdio) in this process, and a change goes out as ``ToolsListChanged`` on that credential's
listen streams. A choice starts as the credential's stored toolsets (an API key's or OAuth
connection's, on the caller), else the server's (``fable mcp --toolsets``, ``FABLE_MCP_TOOLSETS``).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from fable_core.tools.caller import Caller
from fable_core.tools.toolsets import ToolChoice
from fable_mcp.identity import connection_of, credential_of
from fable_mcp.subscriptions import Subscriptions

__all__ = ["ToolChoices"]

_log = logging.getLogger(__name__)
MAX_SESSIONLESS = 1024  # 2026 credentials remembered; the least recently used is forgotten (back to its default)


class ToolChoices:
    def __init__(self, default: Sequence[str], subscriptions: Subscriptions) -> None:
        self.default = list(default)
        self.subscriptions = subscriptions
        self._by_connection: dict[Connection, ToolChoice] = {}
        self._by_credential: OrderedDict[tuple[int, str], ToolChoice] = OrderedDict()
        self._telling: set[asyncio.Task[None]] = set()

    def of(self, ctx: ServerRequestContext[Any, Any], caller: Caller) -> ToolChoice:
        """The choice of the client ``ctx`` came from, made on first use."""
        start = tuple(caller.toolsets if caller.toolsets is not None else self.default)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            credential = credential_of(ctx)
            key = (caller.user_id, credential.key if credential is not None else "local")
            found = self._by_credential.get(key)
            if found is None or found.origin != start:  # new, or its key's toolsets were changed
                tell = self.subscriptions.tools_changed_for
                found = self._by_credential[key] = ToolChoice(start, lambda: self._tell(tell(key)))
                while len(self._by_credential) > MAX_SESSIONLESS:
                    self._by_credential.popitem(last=False)
            self._by_credential.move_to_end(key)
            return found
        conn = connection_of(ctx)
        choice = self._by_connection.get(conn)
        if choice is None or choice.origin != start:
            choice = self._by_connection[conn] = ToolChoice(start, lambda: self._tell(_list_changed(conn)))
            conn.exit_stack.callback(self._by_connection.pop, conn, None)
        return choice

    def _tell(self, telling: Any) -> None:
        task = asyncio.get_running_loop().create_task(telling)
        self._telling.add(task)
        task.add_done_callback(self._telling.discard)


async def _list_changed(conn: Connection) -> None:
    try:
        await conn.send_tool_list_changed()
    except Exception:  # noqa: BLE001 - a client gone away hears nothing, and needs to
        _log.info("not telling a closed MCP connection of its tool list", exc_info=True)
