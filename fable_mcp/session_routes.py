"""2025 MCP sessions behind a load balancer: a registry in PostgreSQL, and forwarding to the owner.

A 2025 session lives in the memory of the replica that opened it (the SDK's transport and its
streams). Behind a balancer that does not route by session, its next requests reach any replica.
With ``FABLE_REPLICA_URL`` set (this replica's internal URL), each replica:

- registers every session it opens in ``mcp_sessions`` (a hash of the id, never the id; its own
  URL; the hash of the credential that opened it) before the client learns the id, and removes it
  when the session ends (DELETE, idle timeout, a crash), and all of its rows when it drains or
  stops; a heartbeat keeps its rows fresh, and rows of a replica killed are pruned
  (:mod:`fable_core.infra.mcp_sessions`);
- answers a request for a session it holds itself; one held by another replica is forwarded there
  (method, headers including the bearer, body, and the answer streamed back, SSE included), marked
  with :data:`FORWARDED` so that the owner never forwards again. The owner authenticates the
  request itself and the SDK checks it is the key that opened the session;
- an owner that cannot be reached (connection refused, no connect within :data:`CONNECT_TIMEOUT`)
  or that is draining (503) has its row deleted and the client gets the spec's 404 "Session not
  found", on which it opens a new session; a session nobody holds gets that 404 at once.

The marker only ever stops forwarding: where a request goes is decided by the registry alone,
which only replicas write, and authentication has run before any of this.

Without ``FABLE_REPLICA_URL`` nothing is registered or forwarded (one replica: the SDK's own
404 for an id it does not know).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import anyio
import httpx
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fable_core.errors import Unavailable
from fable_core.infra.mcp_sessions import BEAT, SessionRegistry
from fable_mcp.identity import CREDENTIAL_SCOPE_KEY

__all__ = ["CONNECT_TIMEOUT", "FORWARDED", "RegisteredSessions", "SessionRoutes"]

FORWARDED = "fable-mcp-forwarded"  # set on a request one replica forwards to another
CONNECT_TIMEOUT = 1.0  # seconds to reach an owner (on the internal network) before it counts as gone
_SESSION = "mcp-session-id"
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                         "transfer-encoding", "upgrade"})
_NOT_FOUND = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Session not found"}}'
_log = logging.getLogger(__name__)


class RegisteredSessions(StreamableHTTPSessionManager):
    """The SDK's session manager, telling :class:`SessionRoutes` when a session ends, however it
    ends (DELETE, idle timeout, crash, an opening that failed). The SDK (2.3) has no public hook
    for that; ``_discard_session`` is where every end goes (``test_replicas_mcp_registry`` fails
    if that changes)."""

    routes: SessionRoutes | None = None

    async def _discard_session(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        await super()._discard_session(session_id, transport)
        if self.routes is not None:
            await self.routes.ended(session_id)


class SessionRoutes:
    """ASGI wrapper in front of the SDK's transport (after authentication): registers the sessions
    this replica opens and forwards requests for sessions another replica holds."""

    def __init__(self, app: ASGIApp, registry: SessionRegistry) -> None:
        self.app = app
        self.registry = registry
        self.local: set[str] = set()  # sessions this replica holds (and registered)
        self.closing = False
        self._client: httpx.AsyncClient | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The forwarding client and the heartbeat, for the app's lifetime; this replica's rows are
        removed at the start (a previous life's) and at the end."""
        await self.registry.drop_all()
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT), follow_redirects=False,
                                         limits=httpx.Limits(max_connections=None, max_keepalive_connections=32))
        beating = asyncio.create_task(self._beat())
        try:
            yield
        finally:
            self.closing = True
            beating.cancel()
            await self._client.aclose()
            with anyio.CancelScope(shield=True), contextlib.suppress(Unavailable):
                await self.registry.drop_all()

    def drain(self) -> None:
        """A drain hook (:mod:`fable_web.drain`): unregister this replica's sessions now, so their
        next requests get 404 on the other replicas and their clients open new sessions there."""
        self.closing = True
        task = asyncio.get_running_loop().create_task(self.registry.drop_all())
        task.add_done_callback(_log_failure)

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(BEAT)
            try:
                await self.registry.beat(set(self.local))
            except Unavailable:
                _log.warning("could not refresh this replica's MCP sessions (database away)")

    async def ended(self, session: str) -> None:
        if session not in self.local:
            return
        self.local.discard(session)
        if self.closing:
            return  # all of this replica's rows go at once
        with anyio.move_on_after(5, shield=True):
            try:
                await self.registry.forget(session)
            except Unavailable:
                _log.warning("could not unregister an ended MCP session (database away); it is pruned later")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        session = headers.get(_SESSION)
        if session is None:
            await self.app(scope, receive, self._registering(scope, send))
            return
        if session in self.local or FORWARDED in headers:
            await self.app(scope, receive, send)  # ours, or forwarded here and not ours: the SDK's 404
            return
        try:
            row = await self.registry.owner(session)
        except Unavailable:
            await _unavailable(send)
            return
        credential = scope.get(CREDENTIAL_SCOPE_KEY)
        if row is None or row.replica == self.registry.replica or credential is None or row.key_hash != credential.key:
            await _not_found(send)  # as the SDK answers for a session not opened with this key
            return
        if not await self._forward(row.replica, scope, receive, send):
            _log.info("MCP session owner %s is gone; its session is forgotten", row.replica)
            with contextlib.suppress(Unavailable):
                await self.registry.forget(session)
            await _not_found(send)

    def _registering(self, scope: Scope, send: Send) -> Send:
        """``send``, registering the session an opening request opened before its id is sent."""
        credential = scope.get(CREDENTIAL_SCOPE_KEY)

        async def registering(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 300 and credential is not None:
                opened = Headers(raw=message.get("headers", [])).get(_SESSION)
                if opened is not None and opened not in self.local:
                    self.local.add(opened)  # first: a heartbeat meanwhile must not take the new row for a stray
                    try:
                        await self.registry.register(opened, credential.key)
                    except BaseException:
                        self.local.discard(opened)
                        raise
            await send(message)

        return registering

    async def _forward(self, replica: str, scope: Scope, receive: Receive, send: Send) -> bool:
        """Relay the request to ``replica`` and its answer back; False if the replica is gone."""
        assert self._client is not None
        headers = [(k, v) for k, v in scope["headers"] if k.decode("latin-1").lower() not in _HOP_BY_HOP]
        headers.append((FORWARDED.encode(), b"1"))
        query = scope.get("query_string", b"")
        request = self._client.build_request(scope["method"], httpx.URL(replica + scope["path"], query=query),
                                              headers=headers, content=_body(receive))
        try:
            upstream = await self._client.send(request, stream=True)
        except httpx.TransportError:
            return False
        try:
            if upstream.status_code == 503:
                return False  # draining: its sessions are going
            await send({"type": "http.response.start", "status": upstream.status_code, "headers": [
                (k, v) for k, v in upstream.headers.raw if k.decode("latin-1").lower() not in _HOP_BY_HOP]})
            async with anyio.create_task_group() as tg:
                tg.start_soon(_until_disconnect, receive, tg.cancel_scope)
                with contextlib.suppress(httpx.HTTPError, OSError):  # the owner or the client went away
                    async for chunk in upstream.aiter_raw():
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
                tg.cancel_scope.cancel()
            with contextlib.suppress(OSError):  # the client went away
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await upstream.aclose()
        return True


async def _body(receive: Receive) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return
        yield message.get("body", b"")
        if not message.get("more_body", False):
            return


async def _until_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    """Once the body is read, the next message is the client going away: stop relaying then."""
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


async def _not_found(send: Send) -> None:
    await send({"type": "http.response.start", "status": 404, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(_NOT_FOUND)).encode())]})
    await send({"type": "http.response.body", "body": _NOT_FOUND})


async def _unavailable(send: Send) -> None:
    body = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"the session registry is unavailable"}}'
    await send({"type": "http.response.start", "status": 503, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"retry-after", b"1")]})
    await send({"type": "http.response.body", "body": body})


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        _log.warning("could not unregister this replica's MCP sessions: %s", task.exception())
