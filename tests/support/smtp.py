"""A real SMTP server for tests: aiosmtpd on 127.0.0.1 in the test's event loop, keeping each
message it receives (``await inbox.messages.get()``) with the login it came with."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from email import message_from_bytes
from email.message import Message
from typing import Any

from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword

__all__ = ["Inbox", "smtp_server"]


class Inbox:
    """An aiosmtpd handler that keeps each message and wakes whoever waits for one. With
    ``logins``, it asks for AUTH and accepts exactly those (username, password) pairs."""

    def __init__(self, logins: set[tuple[str, str]] | None = None) -> None:
        self.messages: asyncio.Queue[Message] = asyncio.Queue()
        self.logins = logins
        self.authenticated: list[str] = []

    async def handle_DATA(self, server: SMTP, session: object, envelope: Envelope) -> str:  # noqa: N802  aiosmtpd's name
        await self.messages.put(message_from_bytes(envelope.content))  # type: ignore[arg-type]
        return "250 OK"

    def authenticate(self, server: SMTP, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        if isinstance(data, LoginPassword) and (data.login.decode(), data.password.decode()) in (self.logins or set()):
            self.authenticated.append(data.login.decode())
            return AuthResult(success=True)
        return AuthResult(success=False, handled=False)


@asynccontextmanager
async def smtp_server(inbox: Inbox | None = None) -> AsyncIterator[tuple[Inbox, int]]:
    """``async with smtp_server() as (inbox, port):`` a server taking mail (and, when ``inbox``
    has logins, offering AUTH without TLS, on loopback only, and refusing other logins)."""
    handler = inbox or Inbox()
    auth = handler.logins is not None

    def factory() -> SMTP:
        return SMTP(handler, authenticator=handler.authenticate if auth else None, auth_require_tls=not auth)

    server = await asyncio.get_running_loop().create_server(factory, "127.0.0.1", 0)
    try:
        yield handler, server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()
