"""Password reset by email, against a real SMTP server (aiosmtpd) on 127.0.0.1."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from email import message_from_bytes
from email.message import Message

import httpx
import pytest
from aiosmtpd.smtp import SMTP, Envelope
from sqlalchemy import func, select, text, update
from starlette.applications import Starlette
from web_helpers import BASE, PASSWORD, error_of, make_client, signed_in

from fable_core.caller import Caller
from fable_core.db.models import AccountToken, User
from fable_core.runtime import Fable
from fable_web.app import create_app

NEW = "a brand new password"


class Inbox:
    """An aiosmtpd handler that keeps each message and wakes whoever waits for one."""

    def __init__(self) -> None:
        self.messages: asyncio.Queue[Message] = asyncio.Queue()

    async def handle_DATA(self, server: SMTP, session: object, envelope: Envelope) -> str:
        await self.messages.put(message_from_bytes(envelope.content))  # type: ignore[arg-type]
        return "250 OK"


@pytest.fixture
async def inbox() -> AsyncIterator[tuple[Inbox, int]]:
    handler = Inbox()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: SMTP(handler), "127.0.0.1", 0)
    yield handler, server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()


@pytest.fixture
async def mail_app(fable: Fable, inbox: tuple[Inbox, int]) -> AsyncIterator[Starlette]:
    settings = fable.settings.model_copy(update={
        "smtp_host": "127.0.0.1", "smtp_port": inbox[1], "smtp_starttls": False,
        "smtp_from": "fable@example.com",
    })
    yield create_app(Fable(settings, fable.db))


@pytest.fixture
async def alice_with_email(fable: Fable, alice: Caller) -> Caller:
    async with fable.db.transaction() as s:
        await s.execute(update(User).where(User.id == alice.user_id).values(email="alice@example.com"))
    return alice


async def _tokens(fable: Fable) -> int:
    async with fable.db.transaction() as s:
        return await s.scalar(select(func.count(AccountToken.id))) or 0


async def _request_link(c: httpx.AsyncClient, inbox: Inbox, **who: str) -> str:
    r = await c.post("/api/auth/forgot-password", json=who)
    assert r.status_code == 202, r.text
    mail = await asyncio.wait_for(inbox.messages.get(), 10)
    assert mail["To"] == "alice@example.com" and mail["From"] == "fable@example.com"
    match = re.search(r"/reset-password\?token=(\S+)", mail.get_payload(decode=True).decode())
    assert match, mail.get_payload()
    return match.group(1)


async def test_reset_by_email(
    mail_app: Starlette, inbox: tuple[Inbox, int], alice_with_email: Caller, fable: Fable
) -> None:
    async with signed_in(mail_app, "alice") as old_session, make_client(mail_app, origin=BASE) as c:
        token = await _request_link(c, inbox[0], email="ALICE@example.com")
        r = await c.post("/api/auth/reset-password", json={"token": token, "password": NEW})
        assert r.status_code == 200 and r.json()["user"]["username"] == "alice"
        assert (await old_session.get("/api/notes")).status_code == 401
        r = await c.post("/api/auth/login", json={"username": "alice", "password": PASSWORD})
        assert r.status_code == 401
        r = await c.post("/api/auth/login", json={"username": "alice", "password": NEW})
        assert r.status_code == 200
        # the link works once
        r = await c.post("/api/auth/reset-password", json={"token": token, "password": "yet another one"})
        assert r.status_code == 422 and error_of(r)["details"]["reason"] == "already used"
    async with fable.db.transaction() as s:
        version = await s.scalar(select(User.session_version).where(User.id == alice_with_email.user_id))
    assert version == 2   # the replay changed nothing


async def test_expired_or_unknown_tokens_change_nothing(
    mail_app: Starlette, inbox: tuple[Inbox, int], alice_with_email: Caller, fable: Fable, row_counts
) -> None:
    async with make_client(mail_app, origin=BASE) as c:
        token = await _request_link(c, inbox[0], username="alice")
        async with fable.db.transaction() as s:
            await s.execute(text("UPDATE account_tokens SET expires_at = now() - interval '1 second'"))
        before = await row_counts()
        r = await c.post("/api/auth/reset-password", json={"token": token, "password": NEW})
        assert r.status_code == 422 and error_of(r)["details"]["reason"] == "expired"
        r = await c.post("/api/auth/reset-password", json={"token": "forged", "password": NEW})
        assert r.status_code == 422 and error_of(r)["details"]["reason"] == "unknown"
        r = await c.post("/api/auth/reset-password", json={"token": token, "password": "short"})
        assert r.status_code == 422
        assert await row_counts() == before
        r = await c.post("/api/auth/login", json={"username": "alice", "password": PASSWORD})
        assert r.status_code == 200


async def test_unknown_accounts_get_the_same_answer_and_no_mail(
    mail_app: Starlette, inbox: tuple[Inbox, int], alice: Caller, fable: Fable
) -> None:
    async with make_client(mail_app, origin=BASE) as c:
        for who in ({"username": "nobody"}, {"username": "alice"}):   # alice has no email address
            r = await c.post("/api/auth/forgot-password", json=who)
            assert r.status_code == 202
        r = await c.post("/api/auth/forgot-password", json={})
        assert r.status_code == 422
    assert inbox[0].messages.empty() and await _tokens(fable) == 0


async def test_without_smtp_reset_is_unavailable(client: httpx.AsyncClient, alice_with_email: Caller,
                                                 fable: Fable) -> None:
    r = await client.post("/api/auth/forgot-password", json={"username": "alice"})
    assert r.status_code == 503 and error_of(r)["type"] == "unavailable"
    assert await _tokens(fable) == 0
