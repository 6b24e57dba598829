"""Password reset by email, against a real SMTP server (aiosmtpd) on 127.0.0.1."""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy import func, select, text, update
from starlette.applications import Starlette
from support.pace import scaled
from support.servers import serve
from support.smtp import Inbox, smtp_server
from support.users import PASSWORD
from support.web import BASE, error_of, make_client, signed_in

from fable_core.config import Settings
from fable_core.db.models import AccountToken, User
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app

NEW = "a brand new password"


@pytest.fixture
async def inbox() -> AsyncIterator[tuple[Inbox, int]]:
    async with smtp_server() as server:
        yield server


PUBLIC = "https://fable.example.com"


def mail_settings(fable: Fable, smtp_port: int, **extra: object) -> Settings:
    return fable.settings.model_copy(update={
        "smtp_host": "127.0.0.1", "smtp_port": smtp_port, "smtp_starttls": False,
        "smtp_from": "fable@example.com", "fable_base_url": PUBLIC, **extra,
    })


@pytest.fixture
async def mail_app(fable: Fable, inbox: tuple[Inbox, int]) -> Starlette:
    return create_app(Fable(mail_settings(fable, inbox[1]), fable.db))


async def give_email(fable: Fable, caller: Caller, email: str, *, verified: bool = True) -> None:
    async with fable.db.transaction() as s:
        await s.execute(update(User).where(User.id == caller.user_id).values(
            email=email, email_verified_at=func.now() if verified else None))


@pytest.fixture
async def alice_with_email(fable: Fable, alice: Caller) -> Caller:
    await give_email(fable, alice, "alice@example.com")
    return alice


async def _tokens(fable: Fable) -> int:
    async with fable.db.transaction() as s:
        return await s.scalar(select(func.count(AccountToken.id))) or 0


async def _request_link(c: httpx.AsyncClient, inbox: Inbox, base: str = PUBLIC, **who: str) -> str:
    r = await c.post("/api/auth/forgot-password", json=who)
    assert r.status_code == 202, r.text
    mail = await asyncio.wait_for(inbox.messages.get(), scaled(10))
    assert mail["To"] == "alice@example.com" and mail["From"] == "fable@example.com"
    match = re.search(r"(\S+)/reset-password\?token=(\S+)", mail.get_payload(decode=True).decode())
    assert match, mail.get_payload()
    assert match.group(1) == base  # never the Host the request came with
    return match.group(2)


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
        r = await c.post("/api/auth/login", json={"username": "alice", "password": NEW})
        assert r.status_code == 200  # the replay changed nothing


async def test_a_reset_spends_every_earlier_link(
    mail_app: Starlette, inbox: tuple[Inbox, int], alice_with_email: Caller
) -> None:
    async with make_client(mail_app, origin=BASE) as c:
        first = await _request_link(c, inbox[0], username="alice")
        second = await _request_link(c, inbox[0], username="alice")
        assert (await c.post("/api/auth/reset-password", json={"token": second, "password": NEW})).status_code == 200
        r = await c.post("/api/auth/reset-password", json={"token": first, "password": "taken over!"})
        assert r.status_code == 422 and error_of(r)["details"]["reason"] == "unknown"
        assert (await c.post("/api/auth/login", json={"username": "alice", "password": NEW})).status_code == 200


async def test_a_changed_password_spends_pending_links(
    mail_app: Starlette, inbox: tuple[Inbox, int], alice_with_email: Caller
) -> None:
    async with make_client(mail_app, origin=BASE) as c, signed_in(mail_app, "alice") as browser:
        token = await _request_link(c, inbox[0], username="alice")
        r = await browser.post("/api/auth/password", json={"current_password": PASSWORD, "new_password": NEW})
        assert r.status_code == 200
        r = await c.post("/api/auth/reset-password", json={"token": token, "password": "taken over!"})
        assert r.status_code == 422


async def test_links_never_follow_the_request_host(
    fable: Fable, inbox: tuple[Inbox, int], alice_with_email: Caller, row_counts
) -> None:
    """A forged Host is refused before anything runs; an admitted one (loopback on another
    port) still gets a link on the public URL, not on itself."""
    app = create_app(Fable(mail_settings(fable, inbox[1]), fable.db))
    async with make_client(app, origin=BASE) as c:
        before = await row_counts()
        r = await c.post("/api/auth/forgot-password", json={"username": "alice"},
                         headers={"host": "attacker.example", "origin": "http://attacker.example"})
        assert r.status_code == 421
        assert await row_counts() == before and inbox[0].messages.empty()
        c.headers.update({"host": "127.0.0.1:9999", "origin": "http://127.0.0.1:9999"})
        await _request_link(c, inbox[0], username="alice")


async def test_without_a_public_url_the_first_admins_is_used(
    fable: Fable, inbox: tuple[Inbox, int]
) -> None:
    """No FABLE_BASE_URL: the URL the first admin registered at is pinned (and shown to admins),
    and reset links use it whatever Host a later request names."""
    app = create_app(Fable(mail_settings(fable, inbox[1], fable_base_url=None), fable.db))
    async with make_client(app, origin="http://localhost:8000", host="localhost:8000") as admin:
        r = await admin.post("/api/auth/register", json={"username": "alice", "password": PASSWORD,
                                                         "email": "alice@example.com"})
        assert r.status_code == 201
        settings = (await admin.get("/api/admin/settings")).json()
        assert settings["public_url"] == "http://localhost:8000" and settings["public_url_source"] == "pinned"
        verification = await asyncio.wait_for(inbox[0].messages.get(), scaled(10))
        link = re.search(r"http://localhost:8000/verify-email\?token=(\S+)",
                         verification.get_payload(decode=True).decode())
        assert link is not None
        r = await admin.post("/api/auth/verify-email", json={"token": link.group(1)})
        assert r.status_code == 200 and r.json()["user"]["email_verified"] is True
    async with make_client(app, origin="http://127.0.0.1:1234", host="127.0.0.1:1234") as other:
        await _request_link(other, inbox[0], base="http://localhost:8000", username="alice")


async def test_no_public_url_no_mail(fable: Fable, inbox: tuple[Inbox, int], alice_with_email: Caller) -> None:
    app = create_app(Fable(mail_settings(fable, inbox[1], fable_base_url=None), fable.db))
    async with make_client(app, origin=BASE) as c:
        r = await c.post("/api/auth/forgot-password", json={"username": "alice"})
        assert r.status_code == 202
    assert inbox[0].messages.empty() and await _tokens(fable) == 0


async def test_unverified_addresses_get_no_reset_mail(
    mail_app: Starlette, inbox: tuple[Inbox, int], fable: Fable, alice: Caller, bob: Caller
) -> None:
    """bob claims alice's address without proving it: nothing is ever mailed there for him."""
    await give_email(fable, bob, "alice@example.com", verified=False)
    async with make_client(mail_app, origin=BASE) as c:
        for who in ({"username": "bob"}, {"email": "alice@example.com"}):
            assert (await c.post("/api/auth/forgot-password", json=who)).status_code == 202
    assert inbox[0].messages.empty() and await _tokens(fable) == 0


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
        answers = set()
        for who in ({"username": "nobody"}, {"username": "alice"}):   # alice has no email address
            r = await c.post("/api/auth/forgot-password", json=who)
            answers.add((r.status_code, r.text))
        assert len(answers) == 1 and answers.pop()[0] == 202
        r = await c.post("/api/auth/forgot-password", json={})
        assert r.status_code == 422
    assert inbox[0].messages.empty() and await _tokens(fable) == 0


async def test_a_slow_or_dead_mail_server_is_nobodys_business(
    fable: Fable, alice_with_email: Caller, caplog: pytest.LogCaptureFixture
) -> None:
    """With SMTP down, existing and unknown accounts get the same 202 and body, with no word
    of the mail server; with SMTP hanging, the answer does not wait for it (sent afterwards)."""
    hanging = socket.socket()
    hanging.bind(("127.0.0.1", 0))
    hanging.listen()  # accepts connections and never says a word: an SMTP server that hangs
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
    try:
        for port in (dead.getsockname()[1], hanging.getsockname()[1]):
            app = create_app(Fable(mail_settings(fable, port), fable.db))
            async with serve(app) as url, httpx.AsyncClient(base_url=url, headers={"origin": url}) as c:
                answers = []
                for who in ({"username": "alice"}, {"username": "nobody"}):
                    r = await asyncio.wait_for(c.post("/api/auth/forgot-password", json=who), 5)
                    answers.append((r.status_code, r.text))
                assert answers[0] == answers[1] and answers[0][0] == 202
                assert "127.0.0.1" not in answers[0][1] and "SMTP" not in answers[0][1].upper()
    finally:
        hanging.close()
        dead.close()
    assert "password reset mail not sent" in caplog.text  # the operator hears of it


async def test_without_smtp_reset_is_unavailable(client: httpx.AsyncClient, alice_with_email: Caller,
                                                 fable: Fable) -> None:
    r = await client.post("/api/auth/forgot-password", json={"username": "alice"})
    assert r.status_code == 503 and error_of(r)["type"] == "unavailable"
    assert await _tokens(fable) == 0
