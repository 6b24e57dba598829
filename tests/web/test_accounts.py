"""Accounts over HTTP: register, sign in and out, sessions, passwords, registration, invitations."""

from __future__ import annotations

import httpx
from sqlalchemy import select
from starlette.applications import Starlette
from support.users import PASSWORD
from support.web import BASE, error_of, make_client, signed_in

from fable_core.db.models import LoginSession, User
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def test_first_user_registers_as_admin_and_is_signed_in(client: httpx.AsyncClient) -> None:
    r = await client.get("/api/auth/registration")
    assert r.json() == {"open": True, "mode": "open", "first_user": True}
    r = await client.post("/api/auth/register", json={"username": "ada", "password": PASSWORD})
    assert r.status_code == 201, r.text
    assert r.json()["user"]["role"] == "admin" and r.json()["csrf_token"]
    cookies = {c.split("=", 1)[0]: c.lower() for c in r.headers.get_list("set-cookie")}
    session = cookies["fable_session"]
    assert "httponly" in session and "samesite=lax" in session and "secure" not in session
    # the web UI's hint that someone is signed in: readable by scripts, and nothing but "1"
    assert cookies["fable_signed_in"].startswith("fable_signed_in=1;") and "httponly" not in cookies["fable_signed_in"]
    me = (await client.get("/api/auth/me")).json()
    assert me["user"]["username"] == "ada" and me["auth"] == "session"
    r = await client.post("/api/auth/register", json={"username": "bea", "password": PASSWORD})
    assert r.json()["user"]["role"] == "user"


async def test_secure_cookies_when_configured(fable: Fable) -> None:
    from fable_web.app import create_app

    secure = Fable(fable.settings.model_copy(update={"secure_cookies": True}), fable.db)
    async with make_client(create_app(secure), origin=BASE) as c:
        r = await c.post("/api/auth/register", json={"username": "ada", "password": PASSWORD})
    assert "secure" in r.headers["set-cookie"].lower()


async def test_login_logout(app: Starlette, alice: Caller) -> None:
    async with make_client(app, origin=BASE) as c:
        r = await c.post("/api/auth/login", json={"username": "alice", "password": "wrong password"})
        assert r.status_code == 401 and error_of(r)["type"] == "unauthenticated"
        r = await c.post("/api/auth/login", json={"username": "nobody", "password": "wrong password"})
        assert r.status_code == 401 and error_of(r)["message"] == "wrong username or password"
        r = await c.post("/api/auth/login", json={"username": "ALICE", "password": PASSWORD})
        assert r.status_code == 200
        assert (await c.get("/api/auth/me")).status_code == 200
        assert (await c.post("/api/auth/logout")).status_code == 204
        assert (await c.get("/api/auth/me")).status_code == 401


async def test_bad_registrations_write_nothing(client: httpx.AsyncClient, alice: Caller, row_counts) -> None:
    before = await row_counts()
    cases = [
        ({"username": "x y", "password": PASSWORD}, 422),
        ({"username": "carol", "password": "short"}, 422),
        ({"username": "carol", "password": PASSWORD, "admin": True}, 422),
        ({"username": "Alice", "password": PASSWORD}, 409),
        ({"username": "carol"}, 422),
    ]
    for body, status in cases:
        r = await client.post("/api/auth/register", json=body)
        assert r.status_code == status, (body, r.text)
    r = await client.post("/api/auth/register", content=b"{", headers={"content-type": "application/json"})
    assert r.status_code == 400
    r = await client.post("/api/auth/register", content=b"username=x", headers={"content-type": "text/plain"})
    assert r.status_code == 415
    assert await row_counts() == before


async def test_password_change_ends_every_other_session(app: Starlette, alice: Caller, fable: Fable) -> None:
    async with signed_in(app, "alice") as laptop, signed_in(app, "alice") as phone:
        r = await laptop.post("/api/auth/password",
                              json={"current_password": "not it at all", "new_password": "a new password"})
        assert r.status_code == 422 and error_of(r)["details"]["field"] == "current_password"
        assert (await phone.get("/api/notes")).status_code == 200   # wrong current password: no change
        r = await laptop.post("/api/auth/password",
                              json={"current_password": PASSWORD, "new_password": "a new password"})
        assert r.status_code == 200, r.text
        assert (await laptop.get("/api/notes")).status_code == 200  # this session continues
        r = await phone.get("/api/notes")
        assert r.status_code == 401 and "ended" in error_of(r)["message"]
    async with fable.db.transaction() as s:
        kept = (await s.execute(select(LoginSession.id).where(LoginSession.user_id == alice.user_id))).all()
    assert len(kept) == 1  # the laptop's; the phone's row is gone, not merely outdated
    async with signed_in(app, "alice", "a new password") as again:
        assert (await again.get("/api/auth/me")).json()["user"]["username"] == "alice"


async def test_a_forged_or_stale_cookie_is_401(app: Starlette, alice: Caller) -> None:
    async with make_client(app, origin=BASE) as c:
        c.cookies.set("fable_session", "not-a-signed-value")
        assert (await c.get("/api/notes")).status_code == 401


async def test_admin_closes_registration_and_invites(
    as_alice: httpx.AsyncClient, app: Starlette, row_counts, bob: Caller
) -> None:
    async with make_client(app, origin=BASE) as anon:
        r = await as_alice.put("/api/admin/registration", json={"mode": "invite"})
        assert r.status_code == 200 and r.json() == {"mode": "invite", "open": False}
        assert (await anon.get("/api/auth/registration")).json() == {"open": False, "mode": "invite",
                                                                      "first_user": False}
        before = await row_counts()
        r = await anon.post("/api/auth/register", json={"username": "carol", "password": PASSWORD})
        assert r.status_code == 403 and "by invitation only" in error_of(r)["message"]
        assert await row_counts() == before

        invite = (await as_alice.post("/api/admin/invitations", json={"email": "carol@example.com"})).json()
        assert invite["url"] == f"{BASE}/register?invitation={invite['token']}"
        r = await anon.post("/api/auth/register",
                            json={"username": "carol", "password": PASSWORD, "invitation": invite["token"]})
        assert r.status_code == 201, r.text
        before = await row_counts()
        r = await anon.post("/api/auth/register",
                            json={"username": "dave", "password": PASSWORD, "invitation": invite["token"]})
        assert r.status_code == 422 and error_of(r)["details"]["reason"] == "already used"
        r = await anon.post("/api/auth/register",
                            json={"username": "dave", "password": PASSWORD, "invitation": "made-up"})
        assert r.status_code == 422 and error_of(r)["details"]["reason"] == "unknown"
        assert await row_counts() == before


async def test_admin_endpoints_refuse_users(alice: Caller, as_bob: httpx.AsyncClient, row_counts) -> None:
    before = await row_counts()
    assert (await as_bob.put("/api/admin/registration", json={"mode": "closed"})).status_code == 403
    assert (await as_bob.post("/api/admin/invitations", json={})).status_code == 403
    assert await row_counts() == before


async def test_invitation_expiry(as_alice: httpx.AsyncClient, app: Starlette, fable: Fable, row_counts) -> None:
    from sqlalchemy import text

    token = (await as_alice.post("/api/admin/invitations", json={})).json()["token"]
    async with fable.db.transaction() as s:
        await s.execute(text("UPDATE account_tokens SET expires_at = now() - interval '1 second'"))
    before = await row_counts()
    async with make_client(app, origin=BASE) as anon:
        r = await anon.post("/api/auth/register",
                            json={"username": "late", "password": PASSWORD, "invitation": token})
    assert r.status_code == 422 and error_of(r)["details"]["reason"] == "expired"
    assert await row_counts() == before
    async with fable.db.transaction() as s:
        assert await s.scalar(select(User).where(User.username == "late")) is None


async def test_an_invitation_for_an_address_admits_only_that_address(
    as_alice: httpx.AsyncClient, app: Starlette, row_counts
) -> None:
    invite = (await as_alice.post("/api/admin/invitations", json={"email": "Carol@Example.com"})).json()
    async with make_client(app, origin=BASE) as anon:
        before = await row_counts()
        r = await anon.post("/api/auth/register", json={"username": "mallory", "password": PASSWORD,
                                                         "email": "mallory@example.com",
                                                         "invitation": invite["token"]})
        assert r.status_code == 422 and error_of(r)["details"]["field"] == "email"
        assert await row_counts() == before   # the invitation is not spent
        r = await anon.post("/api/auth/register", json={"username": "carol", "password": PASSWORD,
                                                         "email": "CAROL@example.com", "invitation": invite["token"]})
        assert r.status_code == 201, r.text
        user = r.json()["user"]
        assert (user["email"], user["email_verified"]) == ("carol@example.com", True)  # the admin vouched


async def test_a_new_email_starts_unverified_and_needs_the_password(
    as_alice: httpx.AsyncClient, fable: Fable, alice: Caller, row_counts
) -> None:
    before = await row_counts()
    r = await as_alice.put("/api/auth/email", json={"password": "not the password", "email": "a@example.com"})
    assert r.status_code == 422 and error_of(r)["details"]["field"] == "current_password"
    r = await as_alice.put("/api/auth/email", json={"password": PASSWORD, "email": "not an address"})
    assert r.status_code == 422
    assert await row_counts() == before
    r = await as_alice.put("/api/auth/email", json={"password": PASSWORD, "email": "Alice@Example.com"})
    assert r.status_code == 200
    assert (r.json()["user"]["email"], r.json()["user"]["email_verified"]) == ("alice@example.com", False)
    r = await as_alice.post("/api/auth/email/verification")
    assert r.status_code == 503   # no mail server configured: said, not pretended
    r = await as_alice.put("/api/auth/email", json={"password": PASSWORD, "email": None})
    assert r.status_code == 200 and r.json()["user"]["email"] is None


async def test_an_admin_disables_and_enables_an_account(
    as_alice: httpx.AsyncClient, app: Starlette, bob: Caller, alice: Caller
) -> None:
    async with signed_in(app, "bob") as bobs:
        users = (await as_alice.get("/api/admin/users")).json()["items"]
        assert [(u["username"], u["is_active"]) for u in users] == [("alice", True), ("bob", True)]
        assert (await bobs.get("/api/admin/users")).status_code == 403
        r = await as_alice.patch(f"/api/admin/users/{bob.user_id}", json={"is_active": False})
        assert r.status_code == 200 and r.json()["is_active"] is False
        assert (await bobs.get("/api/notes")).status_code == 401   # his session ended
        async with make_client(app, origin=BASE) as c:
            r = await c.post("/api/auth/login", json={"username": "bob", "password": PASSWORD})
            assert r.status_code == 401
        r = await as_alice.patch(f"/api/admin/users/{alice.user_id}", json={"is_active": False})
        assert r.status_code == 422                                   # not herself
        assert (await as_alice.patch("/api/admin/users/999", json={"is_active": False})).status_code == 404
        assert (await as_alice.patch(f"/api/admin/users/{bob.user_id}", json={"is_active": True})).status_code == 200
        async with signed_in(app, "bob") as again:
            assert (await again.get("/api/notes")).status_code == 200


async def test_admin_settings_show_and_change_the_public_url(as_alice: httpx.AsyncClient, as_bob) -> None:
    settings = (await as_alice.get("/api/admin/settings")).json()
    assert settings["public_url_source"] == "unset" and settings["public_url"] is None
    r = await as_alice.patch("/api/admin/settings", json={"public_url": "https://notes.example.org/"})
    assert r.status_code == 200 and r.json()["public_url"] == "https://notes.example.org"
    assert r.json()["public_url_source"] == "pinned"
    for bad in ("javascript:alert(1)", "https://x.example/path", "notes.example.org", "https://u:p@x.example"):
        r = await as_alice.patch("/api/admin/settings", json={"public_url": bad})
        assert r.status_code == 422, bad
    assert (await as_bob.patch("/api/admin/settings", json={"public_url": "https://evil.example"})).status_code == 403
    assert (await as_alice.get("/api/admin/settings")).json()["public_url"] == "https://notes.example.org"
