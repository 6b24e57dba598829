"""Admins and accounts over HTTP: the list (last sign-in, notes, storage), disabling (sessions
and keys refused on their next request), roles (never without an active admin) and deletion
(what it owned goes with it, shares both ways included; nothing of anyone else's)."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import func, select, text
from starlette.applications import Starlette
from support.mcp_clients import make_key
from support.users import make_user
from support.web import error_of, make_client, signed_in

from fable_core.db.models import Note, Project, Share, User
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def _users(client: httpx.AsyncClient) -> dict[str, dict]:
    r = await client.get("/api/admin/users")
    assert r.status_code == 200, r.text
    return {u["username"]: u for u in r.json()["items"]}


async def test_the_list_shows_last_sign_in_notes_and_storage(
    as_alice: httpx.AsyncClient, fable: Fable, bob: Caller, call,
) -> None:
    note = await call("create_note", title="Café", body="ñ" * 10, as_=bob)  # 5 + 20 bytes of UTF-8
    await call("update_note", note_id=note["id"], body="ñ" * 20, as_=bob)  # the note now holds 45 bytes
    async with fable.db.reading() as s:
        versions = (await s.execute(text("SELECT octet_length(title) + octet_length(body) FROM note_versions "
                                         "WHERE note_id = :n"), {"n": note["id"]})).scalars().all()
    users = await _users(as_alice)
    assert users["bob"]["notes"] == 1 and users["bob"]["storage_bytes"] == 45 + sum(versions)
    assert users["bob"]["last_login_at"] is None and users["bob"]["is_active"] is True
    assert users["alice"]["last_login_at"] is not None  # as_alice signed in
    assert (users["alice"]["notes"], users["alice"]["storage_bytes"], users["alice"]["role"]) == (0, 0, "admin")
    assert set(users["bob"]) == {"id", "username", "email", "email_verified", "role", "created_at", "is_active",
                                 "last_login_at", "notes", "storage_bytes"}


async def test_a_disabled_users_session_and_key_are_refused_on_their_next_request(
    as_alice: httpx.AsyncClient, app: Starlette, fable: Fable, bob: Caller,
) -> None:
    key = await make_key(fable, bob)
    async with signed_in(app, "bob") as browser, make_client(app, authorization=f"Bearer {key}") as script:
        assert (await browser.get("/api/notes")).status_code == 200  # both remembered by this process now
        assert (await script.get("/api/notes")).status_code == 200
        r = await as_alice.patch(f"/api/admin/users/{bob.user_id}", json={"is_active": False})
        assert r.status_code == 200 and r.json()["is_active"] is False
        assert (await browser.get("/api/notes")).status_code == 401
        assert (await script.get("/api/notes")).status_code == 401
        assert (await as_alice.patch(f"/api/admin/users/{bob.user_id}", json={"is_active": True})).status_code == 200
        assert (await script.get("/api/notes")).status_code == 200  # the key works again
        assert (await browser.get("/api/notes")).status_code == 401  # the session ended for good


async def test_roles_change_but_an_active_admin_always_remains(
    as_alice: httpx.AsyncClient, app: Starlette, fable: Fable, alice: Caller, bob: Caller, row_counts,
) -> None:
    before = await row_counts()
    r = await as_alice.patch(f"/api/admin/users/{alice.user_id}", json={"role": "user"})
    assert r.status_code == 422 and "last active admin" in error_of(r)["message"]
    assert error_of(r)["details"]["field"] == "role"
    for body, status in [({}, 422), ({"role": "owner"}, 422), ({"is_active": "no"}, 422), ({"admin": True}, 422)]:
        r = await as_alice.patch(f"/api/admin/users/{bob.user_id}", json=body)
        assert r.status_code == status, (body, r.text)
    assert (await as_alice.patch("/api/admin/users/999", json={"role": "admin"})).status_code == 404
    assert await row_counts() == before

    async with signed_in(app, "bob") as bobs:
        assert (await bobs.get("/api/admin/users")).status_code == 403
        r = await as_alice.patch(f"/api/admin/users/{bob.user_id}", json={"role": "admin"})
        assert r.status_code == 200 and r.json()["role"] == "admin"
        assert (await bobs.get("/api/admin/users")).status_code == 200  # at once, in this process
        r = await as_alice.patch(f"/api/admin/users/{alice.user_id}", json={"role": "user"})
        assert r.status_code == 200  # another active admin remains: she may step down
        assert (await as_alice.get("/api/admin/users")).status_code == 403
        # a disabled admin does not count: bob cannot disable himself, nor demote himself now
        r = await bobs.patch(f"/api/admin/users/{bob.user_id}", json={"is_active": False})
        assert r.status_code == 422
        r = await bobs.patch(f"/api/admin/users/{bob.user_id}", json={"role": "user"})
        assert r.status_code == 422 and "last active admin" in error_of(r)["message"]


async def test_a_change_of_role_and_state_together_is_all_or_nothing(
    as_alice: httpx.AsyncClient, alice: Caller, bob: Caller,
) -> None:
    await as_alice.patch(f"/api/admin/users/{bob.user_id}", json={"role": "admin"})
    r = await as_alice.patch(f"/api/admin/users/{alice.user_id}", json={"role": "user", "is_active": False})
    assert r.status_code == 422  # not herself: and so her role stays too
    assert (await _users(as_alice))["alice"]["role"] == "admin"


async def _share(fable: Fable, owner: Caller, grantee: Caller, *, project_id: int | None = None,
                 note_id: int | None = None) -> None:
    async with fable.db.transaction() as s:
        s.add(Share(owner_id=owner.user_id, project_id=project_id, note_id=note_id,
                    grantee_user_id=grantee.user_id, permission="editor", shared_by=owner.user_id))


async def test_deleting_a_user_takes_their_data_and_every_share_to_or_from_them(
    as_alice: httpx.AsyncClient, fable: Fable, alice: Caller, bob: Caller, call, row_counts,
) -> None:
    carol = await make_user(fable, "carol", password=None)
    alices_project = await call("create_project", title="Garden")
    alices_note = await call("create_note", title="Seeds", project_id=alices_project["id"])
    bobs_note = await call("create_note", title="Bob's plan", as_=bob)
    await call("create_project", title="Bob's shed", as_=bob)
    carols_note = await call("create_note", title="Carol's list", as_=carol)
    await _share(fable, alice, bob, project_id=alices_project["id"])      # to him
    await _share(fable, bob, carol, note_id=bobs_note["id"])               # from him
    await _share(fable, alice, carol, note_id=alices_note["id"])           # neither
    await _share(fable, carol, alice, note_id=carols_note["id"])           # neither

    before = await row_counts()
    assert (await as_alice.delete(f"/api/admin/users/{alice.user_id}")).status_code == 422  # not herself
    assert (await as_alice.delete("/api/admin/users/999")).status_code == 404
    assert await row_counts() == before

    r = await as_alice.delete(f"/api/admin/users/{bob.user_id}")
    assert r.status_code == 200, r.text
    assert r.json() == {"id": bob.user_id, "username": "bob", "deleted": True, "notes": 1, "projects": 1,
                        "shares_given": 1, "shares_received": 1}
    async with fable.db.reading() as s:
        shares = (await s.execute(select(Share.owner_id, Share.grantee_user_id).order_by(Share.id))).all()
        assert shares == [(alice.user_id, carol.user_id), (carol.user_id, alice.user_id)]
        assert await s.scalar(select(func.count()).select_from(User).where(User.id == bob.user_id)) == 0
        titles = sorted((await s.execute(select(Note.title))).scalars())
        assert titles == ["Carol's list", "Seeds"]
        assert (await s.execute(select(Project.title))).scalars().all() == ["Garden"]
    assert "bob" not in await _users(as_alice)


async def test_the_last_admin_cannot_be_deleted_even_by_an_operator(fable: Fable, alice: Caller) -> None:
    from fable_core.admin.audit import Actor
    from fable_core.errors import InvalidInput
    from fable_core.identity import users as admin

    with pytest.raises(InvalidInput, match="'alice' is the last active admin"):
        async with fable.db.transaction() as s:
            await admin.delete_account(s, Actor.operator(), "alice")
    async with fable.db.reading() as s:
        assert await s.scalar(select(func.count()).select_from(User)) == 1
