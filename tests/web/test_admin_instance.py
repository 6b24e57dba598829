"""The instance over HTTP: registration open, by invitation or closed; invitations with a
lifetime, listed and revoked; the public URL; the mail server (its password never readable)
and a test mail a real SMTP server receives."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import text
from starlette.applications import Starlette
from support.pace import scaled
from support.smtp import Inbox, smtp_server
from support.users import PASSWORD
from support.web import BASE, error_of, make_client, signed_in

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app

SECRET = "correct horse battery staple"  # the SMTP login's


async def _register(app: Starlette, username: str, invitation: str | None = None) -> httpx.Response:
    async with make_client(app, origin=BASE, ip=f"198.51.100.{len(username)}") as anon:
        body = {"username": username, "password": PASSWORD} | ({"invitation": invitation} if invitation else {})
        return await anon.post("/api/auth/register", json=body)


async def test_three_registration_modes(as_alice: httpx.AsyncClient, app: Starlette, row_counts) -> None:
    assert (await as_alice.get("/api/admin/registration")).json() == {"mode": "open", "open": True}
    assert (await _register(app, "anyone")).status_code == 201

    await as_alice.put("/api/admin/registration", json={"mode": "invite"})
    token = (await as_alice.post("/api/admin/invitations", json={})).json()["token"]
    before = await row_counts()
    r = await _register(app, "uninvited")
    assert r.status_code == 403 and error_of(r)["details"]["reason"] == "invite_only"
    assert await row_counts() == before
    assert (await _register(app, "invited", token)).status_code == 201

    r = await as_alice.put("/api/admin/registration", json={"mode": "closed"})
    assert r.json() == {"mode": "closed", "open": False}
    spare = (await as_alice.get("/api/admin/invitations")).json()["items"]
    assert spare == []
    r = await as_alice.post("/api/admin/invitations", json={})
    assert r.status_code == 409 and "registration is closed" in error_of(r)["message"]
    await as_alice.put("/api/admin/registration", json={"mode": "invite"})
    token = (await as_alice.post("/api/admin/invitations", json={})).json()["token"]
    await as_alice.put("/api/admin/registration", json={"mode": "closed"})
    before = await row_counts()
    r = await _register(app, "latecomer", token)
    assert r.status_code == 403 and error_of(r)["details"]["reason"] == "closed"
    assert await row_counts() == before  # and the invitation is not spent
    await as_alice.put("/api/admin/registration", json={"mode": "invite"})
    assert (await _register(app, "latecomer", token)).status_code == 201

    for bad in ({"mode": "ajar"}, {"open": True}, {}):
        r = await as_alice.put("/api/admin/registration", json=bad)
        assert r.status_code == 422, bad
    assert (await as_alice.get("/api/admin/registration")).json()["mode"] == "invite"


async def test_an_expired_or_revoked_invitation_admits_nobody(
    as_alice: httpx.AsyncClient, app: Starlette, fable: Fable, row_counts,
) -> None:
    await as_alice.put("/api/admin/registration", json={"mode": "invite"})
    short = (await as_alice.post("/api/admin/invitations", json={"expires_in_hours": 1})).json()
    kept = (await as_alice.post("/api/admin/invitations", json={"email": "Dora@Example.com"})).json()
    assert datetime.fromisoformat(short["expires_at"]) - datetime.now(UTC) < timedelta(hours=1)
    assert datetime.fromisoformat(kept["expires_at"]) - datetime.now(UTC) > timedelta(days=6)
    pending = (await as_alice.get("/api/admin/invitations")).json()["items"]
    assert [(i["id"], i["email"], i["created_by"]) for i in pending] == [
        (short["id"], None, "alice"), (kept["id"], "dora@example.com", "alice")]
    assert "token" not in pending[0] and short["token"] not in str(pending)

    r = await as_alice.delete(f"/api/admin/invitations/{kept['id']}")
    assert r.status_code == 200 and r.json() == {"id": kept["id"], "revoked": True}
    assert (await as_alice.delete(f"/api/admin/invitations/{kept['id']}")).status_code == 404
    async with fable.db.transaction() as s:
        await s.execute(text("UPDATE account_tokens SET expires_at = now() - interval '1 second' WHERE id = :i"),
                        {"i": short["id"]})
    assert (await as_alice.get("/api/admin/invitations")).json()["items"] == []
    before = await row_counts()
    r = await _register(app, "dora", kept["token"])
    assert r.status_code == 422 and "unknown" in error_of(r)["message"]
    r = await _register(app, "dora", short["token"])
    assert r.status_code == 422 and error_of(r)["details"]["reason"] == "expired"
    assert (await as_alice.delete(f"/api/admin/invitations/{short['id']}")).status_code == 404  # not pending
    for bad in ({"expires_in_hours": 0}, {"expires_in_hours": 24 * 91}, {"email": "not mail"}, {"days": 3}):
        r = await as_alice.post("/api/admin/invitations", json=bad)
        assert r.status_code == 422, bad
    assert await row_counts() == before


async def test_the_configured_default_and_the_older_setting_are_read(fable: Fable, alice: Caller) -> None:
    from fable_core.config import load_settings

    assert load_settings({"FABLE_OPEN_REGISTRATION": "false"}).registration_default == "invite"
    assert load_settings({"FABLE_REGISTRATION": "closed", "FABLE_OPEN_REGISTRATION": "true"}
                         ).registration_default == "closed"
    closed = create_app(Fable(fable.settings.model_copy(update={"fable_registration": "closed"}), fable.db))
    async with make_client(closed, origin=BASE) as anon:
        assert (await anon.get("/api/auth/registration")).json() == {"open": False, "mode": "closed",
                                                                      "first_user": False}
        async with fable.db.transaction() as s:  # what an older Fable stored when an admin closed it
            await s.execute(text("INSERT INTO instance_settings (key, value) VALUES ('open_registration', 'false')"))
        assert (await anon.get("/api/auth/registration")).json()["mode"] == "invite"
    async with signed_in(closed, "alice") as admin:
        await admin.put("/api/admin/registration", json={"mode": "open"})
    async with fable.db.reading() as s:
        stored = dict((await s.execute(text("SELECT key, value FROM instance_settings"))).all())
    assert stored == {"registration": "open"}


async def test_the_public_url(as_alice: httpx.AsyncClient) -> None:
    settings = (await as_alice.get("/api/admin/settings")).json()
    assert settings["public_url_source"] == "unset" and settings["registration"] == "open"
    assert settings["mail"] == {"source": "unset"}
    r = await as_alice.patch("/api/admin/settings", json={"public_url": "https://notes.example.org/",
                                                            "registration": "invite"})
    assert r.status_code == 200 and r.json()["public_url"] == "https://notes.example.org"
    assert r.json()["registration"] == "invite"
    for bad in ({"public_url": "javascript:alert(1)"}, {"registration": "maybe"}, {"registration_open": False}):
        r = await as_alice.patch("/api/admin/settings", json=bad)
        assert r.status_code == 422, bad
    settings = (await as_alice.get("/api/admin/settings")).json()
    assert (settings["public_url"], settings["registration"]) == ("https://notes.example.org", "invite")


@pytest.fixture
async def smtp() -> tuple[Inbox, int]:
    async with smtp_server(Inbox(logins={("fable", SECRET)})) as server:
        yield server


async def test_the_mail_server_is_set_here_with_a_password_nobody_reads_back(
    as_alice: httpx.AsyncClient, fable: Fable, smtp: tuple[Inbox, int], row_counts,
) -> None:
    inbox, port = smtp
    mail = {"host": "127.0.0.1", "port": port, "tls": "none", "username": "fable", "password": SECRET,
            "sender": "fable@example.com"}
    r = await as_alice.put("/api/admin/mail", json=mail)
    assert r.status_code == 200, r.text
    assert r.json() == {"source": "instance", "host": "127.0.0.1", "port": port, "tls": "none",
                        "username": "fable", "sender": "fable@example.com", "password_set": True,
                        "password_unreadable": False}
    async with fable.db.reading() as s:
        stored = await s.scalar(text("SELECT value::text FROM instance_settings WHERE key = 'smtp'"))
    assert SECRET not in stored and "password" in stored  # sealed
    for path in ("/api/admin/mail", "/api/admin/settings"):
        assert SECRET not in (await as_alice.get(path)).text

    r = await as_alice.post("/api/admin/mail/test", json={"to": "ops@example.com"})
    assert r.status_code == 200 and r.json() == {"sent": True, "to": "ops@example.com", "server": f"127.0.0.1:{port}"}
    received = await asyncio.wait_for(inbox.messages.get(), scaled(10))
    assert (received["To"], received["From"], received["Subject"]) == (
        "ops@example.com", "fable@example.com", "Fable test message")
    assert inbox.authenticated == ["fable"]

    r = await as_alice.put("/api/admin/mail", json={**{k: v for k, v in mail.items() if k != "password"},
                                                     "sender": "notes@example.com"})
    assert r.json()["password_set"] is True  # left out: kept
    assert (await as_alice.post("/api/admin/mail/test", json={"to": "ops@example.com"})).status_code == 200
    assert (await asyncio.wait_for(inbox.messages.get(), scaled(10)))["From"] == "notes@example.com"

    before = await row_counts()
    bad_bodies = [{**mail, "host": "smtp example"}, {**mail, "port": 0}, {**mail, "tls": "ssl"},
                  {**mail, "sender": "nobody"}, {**mail, "username": None}, {**mail, "colour": "red"},
                  {k: v for k, v in mail.items() if k != "host"}]
    for bad in bad_bodies:
        r = await as_alice.put("/api/admin/mail", json=bad)
        assert r.status_code == 422, (bad, r.text)
    assert await row_counts() == before
    assert (await as_alice.get("/api/admin/mail")).json()["sender"] == "notes@example.com"


async def test_a_failing_test_mail_says_why(as_alice: httpx.AsyncClient, smtp: tuple[Inbox, int]) -> None:
    _, port = smtp
    r = await as_alice.post("/api/admin/mail/test", json={"to": "ops@example.com"})
    assert r.status_code == 503 and "no mail server is configured" in error_of(r)["message"]
    mail = {"host": "127.0.0.1", "port": port, "tls": "none", "username": "fable", "password": "wrong",
            "sender": "fable@example.com"}
    await as_alice.put("/api/admin/mail", json=mail)
    r = await as_alice.post("/api/admin/mail/test", json={"to": "ops@example.com"})
    assert r.status_code == 503 and f"could not send mail through 127.0.0.1:{port}" in error_of(r)["message"]
    await as_alice.put("/api/admin/mail", json={**mail, "tls": "starttls", "password": SECRET})
    r = await as_alice.post("/api/admin/mail/test", json={"to": "ops@example.com"})
    assert r.status_code == 503 and "STARTTLS" in error_of(r)["message"]  # never sent in the clear instead
    r = await as_alice.post("/api/admin/mail/test", json={})
    assert r.status_code == 422 and "no email address" in error_of(r)["message"]  # alice has none
    for bad in ({"to": "not an address"}, {"to": "a@example.com", "cc": "b@example.com"}):
        r = await as_alice.post("/api/admin/mail/test", json=bad)
        assert r.status_code == 422, bad


async def test_the_environment_wins_and_the_settings_say_so(
    fable: Fable, alice: Caller, smtp: tuple[Inbox, int], row_counts,
) -> None:
    inbox, port = smtp
    configured = create_app(Fable(fable.settings.model_copy(update={
        "smtp_host": "127.0.0.1", "smtp_port": port, "smtp_starttls": False, "smtp_username": "fable",
        "smtp_password": SECRET, "smtp_from": "ops@example.com"}), fable.db))
    async with signed_in(configured, "alice") as admin:
        view = (await admin.get("/api/admin/mail")).json()
        assert view["source"] == "environment" and view["password_set"] is True and SECRET not in str(view)
        before = await row_counts()
        r = await admin.put("/api/admin/mail", json={"host": "elsewhere.example", "sender": "x@example.com"})
        assert r.status_code == 409 and "SMTP_HOST" in error_of(r)["message"]
        assert await row_counts() == before
        r = await admin.post("/api/admin/mail/test", json={"to": "someone@example.com"})
        assert r.status_code == 200
    assert (await asyncio.wait_for(inbox.messages.get(), scaled(10)))["From"] == "ops@example.com"


async def test_a_password_sealed_under_another_secret_key_is_reported_not_used(
    as_alice: httpx.AsyncClient, fable: Fable, alice: Caller, smtp: tuple[Inbox, int],
) -> None:
    _, port = smtp
    await as_alice.put("/api/admin/mail", json={"host": "127.0.0.1", "port": port, "tls": "none", "username": "fable",
                                                 "password": SECRET, "sender": "fable@example.com"})
    rekeyed = create_app(Fable(fable.settings.model_copy(update={"fable_secret_key": "another key"}), fable.db))
    async with signed_in(rekeyed, "alice") as admin:
        assert (await admin.get("/api/admin/mail")).json()["password_unreadable"] is True
        r = await admin.post("/api/admin/mail/test", json={"to": "ops@example.com"})
        assert r.status_code == 503 and "enter it again" in error_of(r)["message"]
