"""Signed-in sessions live server-side: signing out ends them (a copied cookie dies too), one
or all of them, and only from our own pages; credentials are managed from a session only."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import func, select
from starlette.applications import Starlette
from support.users import PASSWORD
from support.web import BASE, error_of, make_client, signed_in

from fable_core.db.models import LoginSession
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def _copy_of(app: Starlette, browser: httpx.AsyncClient) -> httpx.AsyncClient:
    """Another client carrying the same cookie, as a thief who copied it would."""
    thief = make_client(app, origin=BASE)
    thief.cookies.update(browser.cookies)
    return thief


async def _sessions(fable: Fable) -> int:
    async with fable.db.reading() as s:
        return await s.scalar(select(func.count(LoginSession.id))) or 0


async def test_sign_out_ends_the_session_for_a_copied_cookie_too(app: Starlette, alice: Caller,
                                                                 fable: Fable) -> None:
    async with signed_in(app, "alice") as browser, await _copy_of(app, browser) as thief:
        assert (await thief.get("/api/notes")).status_code == 200
        assert (await browser.post("/api/auth/logout")).status_code == 204
        assert (await thief.get("/api/notes")).status_code == 401
        assert (await thief.post("/api/notes", json={"title": "after logout"})).status_code == 401
        assert (await browser.get("/api/auth/me")).status_code == 401
    assert await _sessions(fable) == 0


async def test_sign_out_from_another_site_is_refused(app: Starlette, alice: Caller) -> None:
    async with signed_in(app, "alice") as browser:
        r = await browser.post("/api/auth/logout", headers={"origin": "https://evil.example"})
        assert r.status_code == 403 and error_of(r)["details"]["reason"] == "csrf"
        assert (await browser.get("/api/notes")).status_code == 200   # still signed in
        csrf = (await browser.get("/api/auth/me")).json()["csrf_token"]
        del browser.headers["origin"]
        r = await browser.post("/api/auth/logout", headers={"x-csrf-token": csrf})
        assert r.status_code == 204


async def test_sign_out_without_a_session_just_clears_the_cookie(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/auth/logout")
    assert r.status_code == 204 and 'fable_session=""' in r.headers["set-cookie"]
    assert 'fable_signed_in=""' in r.headers["set-cookie"]  # and the web UI's hint


async def test_sign_out_everywhere(app: Starlette, alice: Caller, bob: Caller, fable: Fable) -> None:
    async with signed_in(app, "alice") as laptop, signed_in(app, "alice") as phone, \
            signed_in(app, "bob") as other:
        r = await phone.post("/api/auth/logout", json={"everywhere": True})
        assert r.status_code == 204
        assert (await laptop.get("/api/notes")).status_code == 401
        assert (await phone.get("/api/notes")).status_code == 401
        assert (await other.get("/api/notes")).status_code == 200   # bob's session is his own
    assert await _sessions(fable) == 1


async def test_sessions_are_listed_and_ended_one_by_one(app: Starlette, alice: Caller, bob: Caller) -> None:
    async with signed_in(app, "alice") as laptop, signed_in(app, "alice") as phone, \
            signed_in(app, "bob") as other:
        listed = (await laptop.get("/api/auth/sessions", headers={"user-agent": "Laptop"})).json()["items"]
        assert len(listed) == 2 and [s["current"] for s in listed].count(True) == 1
        mine = next(s for s in listed if s["current"])
        theirs = next(s for s in listed if not s["current"])
        bobs = (await other.get("/api/auth/sessions")).json()["items"][0]
        r = await laptop.delete(f"/api/auth/sessions/{bobs['id']}")
        assert r.status_code == 404                                   # not alice's to end
        assert (await other.get("/api/notes")).status_code == 200
        assert (await laptop.delete(f"/api/auth/sessions/{theirs['id']}")).status_code == 200
        assert (await phone.get("/api/notes")).status_code == 401
        assert (await laptop.get("/api/notes")).status_code == 200
        r = await laptop.delete(f"/api/auth/sessions/{mine['id']}")
        assert r.status_code == 200 and 'fable_session=""' in r.headers["set-cookie"]


async def _write_key(browser: httpx.AsyncClient) -> str:
    r = await browser.post("/api/api-keys", json={"name": "agent", "scope": "write"})
    assert r.status_code == 201
    return r.json()["key"]


@pytest.mark.parametrize(("method", "path", "body"), [
    ("POST", "/api/auth/password", {"current_password": PASSWORD, "new_password": "a brand new one"}),
    ("PUT", "/api/auth/email", {"password": PASSWORD, "email": "thief@example.com"}),
    ("POST", "/api/auth/email/verification", None),
    ("GET", "/api/auth/sessions", None),
    ("DELETE", "/api/auth/sessions/1", None),
    ("POST", "/api/admin/invitations", {}),
    ("GET", "/api/admin/settings", None),
    ("PATCH", "/api/admin/settings", {"public_url": "https://evil.example"}),
    ("PUT", "/api/admin/registration", {"open": True}),
    ("GET", "/api/admin/users", None),
    ("PATCH", "/api/admin/users/2", {"is_active": False}),
    ("POST", "/api/api-keys", {"name": "more"}),
    ("DELETE", "/api/api-keys/1", None),
])
async def test_a_write_key_cannot_manage_credentials_or_accounts(
    app: Starlette, alice: Caller, bob: Caller, row_counts, method: str, path: str, body: dict | None
) -> None:
    """A leaked key (even an admin's write key) must not change the password or email, mint
    invitations or keys, end sessions or run the instance; and it never gets a cookie."""
    async with signed_in(app, "alice") as browser:
        key = await _write_key(browser)
    before = await row_counts()
    async with make_client(app, authorization=f"Bearer {key}") as agent:
        r = await agent.request(method, path, json=body)
    assert r.status_code == 403 and error_of(r)["details"]["reason"] == "session_only", r.text
    assert "set-cookie" not in r.headers
    assert await row_counts() == before
    async with make_client(app, origin=BASE) as c:   # the password still works
        assert (await c.post("/api/auth/login", json={"username": "alice", "password": PASSWORD})).status_code == 200


async def test_a_session_from_before_the_hint_gets_it_with_the_page(app: Starlette, alice: Caller,
                                                                    client: httpx.AsyncClient) -> None:
    """The web UI asks "who am I?" only with the hint cookie: a browser signed in before it existed
    gets it with the next page, rather than being shown as signed out after an upgrade."""
    async with signed_in(app, "alice") as browser:
        browser.cookies.delete("fable_signed_in")
        page = await browser.get("/notes")
        assert page.status_code == 200 and "fable_signed_in=1" in page.headers.get("set-cookie", "")
        again = await browser.get("/notes")  # it has the hint now: nothing more
        assert "set-cookie" not in again.headers
        assert "set-cookie" not in (await browser.get("/js/app.js")).headers  # only pages carry it
    assert "set-cookie" not in (await client.get("/notes")).headers  # signed out: no hint
