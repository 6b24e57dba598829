"""Resource change notifications: ``notifications/resources/updated`` when a note changes.

Fable's :class:`~fable_core.infra.events.EventBus` announces a change only after its transaction
commits, and :class:`~fable_core.infra.changes.ChangeFeed` brings those of other Fable processes on
the same database (a stdio ``fable mcp`` hears the web UI's edits). Two protocol eras receive it:

- 2025 clients ``resources/subscribe`` to a URI on their connection; the notification goes out
  on that connection's standalone stream.
- 2026-07-28 clients open a ``subscriptions/listen`` stream; each user has a bus of their own, so
  a stream only ever hears of its own user's notes.

Subscribing to a URI Fable does not serve is accepted and simply never fires. Over HTTP every
subscription remembers the key it was made with: once that key is revoked (or its user
disabled) its connection's subscriptions are dropped and its listen streams ended, at the next
change, so a revoked key hears no more than it could ask for.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from fable_core.db.database import Database
from fable_core.infra.changes import ChangeFeed
from fable_core.infra.events import Event, EventBus, NoteChanged
from fable_core.tools.access import belongs_to, can_read
from fable_core.tools.caller import Caller
from fable_mcp.identity import Credential, connection_of, credential_of
from fable_mcp.resources import note_uri, project_uri

__all__ = ["Subscriptions"]

_log = logging.getLogger(__name__)
_LISTEN_WAIT_SECONDS = 5.0


class _Listeners:
    """The listen streams opened with one credential: its bus, their handler, the credential."""

    def __init__(self, user_id: int, credential: Credential | None) -> None:
        self.user_id = user_id
        self.credential = credential
        self.bus = InMemorySubscriptionBus()
        self.handler = ListenHandler(self.bus)


class _Subscriber:
    """A 2025 connection's subscribed URIs and the credential that subscribed them."""

    def __init__(self, user_id: int, credential: Credential | None) -> None:
        self.user_id = user_id
        self.credential = credential
        self.uris: set[str] = set()


async def _revoked(credential: Credential | None) -> bool:
    return credential is not None and not await credential.still_valid()


class Subscriptions:
    """Who listens to which URI, per connection and per credential."""

    def __init__(self) -> None:
        self._by_connection: dict[Connection, _Subscriber] = {}
        self._listed_tools: set[Connection] = set()  # 2025 connections told when the tool list changes
        self._listeners: dict[tuple[int, str], _Listeners] = {}
        self._unsubscribe: list[Callable[[], None]] = []
        self._others: ChangeFeed | None = None
        self._db: Database | None = None

    def attach(self, events: EventBus, others: ChangeFeed, db: Database) -> None:
        """Hear this process's committed changes and those of other processes on the database
        (``db`` says who may hear of a change to a shared row)."""
        self._others = others
        self._db = db
        self._unsubscribe = [events.subscribe(self.publish), others.subscribe(self.publish)]

    async def _hearing_others(self) -> None:
        """Once a subscription is acknowledged, changes committed after it reach it from any
        process: wait (briefly, it is being set up with the server) for the LISTEN to be in place."""
        if self._others is not None and not self._others.listening.is_set():
            try:
                await asyncio.wait_for(self._others.listening.wait(), _LISTEN_WAIT_SECONDS)
            except TimeoutError:
                _log.warning("not hearing other processes' changes yet; this process's are still sent")

    def detach(self) -> None:
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []
        for listeners in self._listeners.values():
            listeners.handler.close()

    def end_listens(self) -> None:
        """End every open listen stream gracefully (each sends its final result, the spec's
        deliberate close: the client re-listens, on another replica), as the server drains."""
        for listeners in self._listeners.values():
            listeners.handler.close()

    async def subscribe(self, ctx: ServerRequestContext[Any, Any], caller: Caller, uri: str) -> None:
        await self._hearing_others()
        conn = connection_of(ctx)
        if conn not in self._by_connection:
            self._by_connection[conn] = _Subscriber(caller.user_id, credential_of(ctx))
            conn.exit_stack.callback(self._by_connection.pop, conn, None)
        self._by_connection[conn].uris.add(uri)

    def unsubscribe(self, ctx: ServerRequestContext[Any, Any], uri: str) -> None:
        entry = self._by_connection.get(connection_of(ctx))
        if entry is not None:
            entry.uris.discard(uri)

    async def listen(
        self, ctx: ServerRequestContext[Any, Any], caller: Caller,
        params: types.SubscriptionsListenRequestParams,
    ) -> types.SubscriptionsListenResult:
        """Serve a 2026-era listen stream from the bus of the caller's credential."""
        await self._hearing_others()
        credential = credential_of(ctx)
        key = (caller.user_id, credential.key if credential is not None else "local")
        if key not in self._listeners:
            self._listeners[key] = _Listeners(caller.user_id, credential)
        return await self._listeners[key].handler(ctx, params)

    def listed_tools(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """A 2025 connection listed the tools: it hears ``tools/list_changed`` from now on (a
        2026-07-28 client asks for it on its listen stream instead)."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        conn = connection_of(ctx)
        if conn not in self._listed_tools:
            self._listed_tools.add(conn)
            conn.exit_stack.callback(self._listed_tools.discard, conn)

    async def tools_changed(self) -> None:
        """The tools some callers are offered changed (a service came or went): tell every
        client that listed them, to list again."""
        for listeners in list(self._listeners.values()):
            await listeners.bus.publish(ToolsListChanged())
        for conn in list(self._listed_tools):
            try:
                await conn.send_tool_list_changed()
            except Exception:  # noqa: BLE001 - a client that went away must not stop the others
                _log.info("not telling a closed MCP connection of the tool list", exc_info=True)
                self._listed_tools.discard(conn)

    async def tools_changed_for(self, key: tuple[int, str]) -> None:
        """One credential's tool list changed (its client enabled a toolset): tell its listen streams."""
        listeners = self._listeners.get(key)
        if listeners is not None:
            await listeners.bus.publish(ToolsListChanged())

    async def _hears(self, user_id: int, event: Event, heard: dict[int, bool]) -> bool:
        """Whether ``user_id`` may hear of ``event``: their own row, or one shared with them now
        (asked of the database once per user and event: a revoked share stops the news at once).
        Of someone else's row that is gone they cannot be told: whether they could see it went
        with it."""
        if belongs_to(event.user_id, user_id):
            return True
        if event.kind == "deleted" or self._db is None:
            return False
        listener = user_id
        if listener not in heard:
            async with self._db.reading() as session:
                heard[listener] = await (can_read(session, listener, "note", event.note_id) if isinstance(
                    event, NoteChanged) else can_read(session, listener, "project", event.project_id))
        return heard[listener]

    async def publish(self, event: Event) -> None:
        uri = note_uri(event.note_id) if isinstance(event, NoteChanged) else project_uri(event.project_id)
        heard: dict[int, bool] = {}
        for key, listeners in list(self._listeners.items()):
            if not await self._hears(listeners.user_id, event, heard):
                continue
            if await _revoked(listeners.credential):
                _log.info("ending the listen streams of a revoked MCP credential")
                listeners.handler.close()
                self._listeners.pop(key, None)
            else:
                await listeners.bus.publish(ResourceUpdated(uri=uri))
        for conn, subscriber in list(self._by_connection.items()):
            if uri not in subscriber.uris or not await self._hears(subscriber.user_id, event, heard):
                continue
            if await _revoked(subscriber.credential):
                _log.info("dropping the subscriptions of a revoked MCP credential")
                self._by_connection.pop(conn, None)
            else:
                await self._notify(conn, uri)

    async def _notify(self, conn: Connection, uri: str) -> None:
        try:
            await conn.send_resource_updated(uri)
        except Exception:  # noqa: BLE001 - a client that went away must not fail the writer
            _log.info("dropping subscriptions of a closed MCP connection", exc_info=True)
            self._by_connection.pop(conn, None)
