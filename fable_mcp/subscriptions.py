"""Resource change notifications: ``notifications/resources/updated`` when a note changes.

Fable's :class:`~fable_core.events.EventBus` announces a change only after its transaction
commits. Two protocol eras receive it:

- 2025 clients ``resources/subscribe`` to a URI on their connection; the notification goes out
  on that connection's standalone stream.
- 2026-07-28 clients open a ``subscriptions/listen`` stream; each user has a bus of their own, so
  a stream only ever hears of its own user's notes.

Subscribing to a URI Fable does not serve is accepted and simply never fires.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated

from fable_core.caller import Caller
from fable_core.events import Event, EventBus, NoteChanged, ProjectChanged
from fable_mcp.identity import connection_of
from fable_mcp.resources import note_uri, project_uri

__all__ = ["Subscriptions"]

_log = logging.getLogger(__name__)


class Subscriptions:
    """Who listens to which URI, per connection and per user."""

    def __init__(self) -> None:
        self._by_connection: dict[Connection, tuple[int, set[str]]] = {}
        self._buses: dict[int, tuple[InMemorySubscriptionBus, ListenHandler]] = {}
        self._unsubscribe: Callable[[], None] | None = None

    def attach(self, events: EventBus) -> None:
        self._unsubscribe = events.subscribe(self.publish)

    def detach(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for _, handler in self._buses.values():
            handler.close()

    def subscribe(self, ctx: ServerRequestContext[Any, Any], caller: Caller, uri: str) -> None:
        conn = connection_of(ctx)
        if conn not in self._by_connection:
            self._by_connection[conn] = (caller.user_id, set())
            conn.exit_stack.callback(self._by_connection.pop, conn, None)
        self._by_connection[conn][1].add(uri)

    def unsubscribe(self, ctx: ServerRequestContext[Any, Any], uri: str) -> None:
        entry = self._by_connection.get(connection_of(ctx))
        if entry is not None:
            entry[1].discard(uri)

    async def listen(
        self, ctx: ServerRequestContext[Any, Any], caller: Caller,
        params: types.SubscriptionsListenRequestParams,
    ) -> types.SubscriptionsListenResult:
        """Serve a 2026-era listen stream from the caller's own bus."""
        if caller.user_id not in self._buses:
            bus = InMemorySubscriptionBus()
            self._buses[caller.user_id] = (bus, ListenHandler(bus))
        return await self._buses[caller.user_id][1](ctx, params)

    async def publish(self, event: Event) -> None:
        if isinstance(event, NoteChanged):
            uri = note_uri(event.note_id)
        elif isinstance(event, ProjectChanged):
            uri = project_uri(event.project_id)
        else:
            return
        if event.user_id in self._buses:
            await self._buses[event.user_id][0].publish(ResourceUpdated(uri=uri))
        for conn, (user_id, uris) in list(self._by_connection.items()):
            if user_id == event.user_id and uri in uris:
                await self._notify(conn, uri)

    async def _notify(self, conn: Connection, uri: str) -> None:
        try:
            await conn.send_resource_updated(uri)
        except Exception:  # noqa: BLE001 - a client that went away must not fail the writer
            _log.info("dropping subscriptions of a closed MCP connection", exc_info=True)
            self._by_connection.pop(conn, None)
