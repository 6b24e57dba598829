"""Each audited action by a user writes exactly one audit row; a refused one writes none; a
refused sign-in writes the name tried, never the password."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from starlette.applications import Starlette
from support.logs import Call, Rows, client_of, signed_in
from support.users import make_user

from fable_core.errors import InvalidInput, NotFound
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

WRONG = "not the password at all 91c2"


async def test_sign_in_and_failed_sign_in(app: Starlette, fable: Fable, alice: Caller, log_rows: Rows) -> None:
    async with signed_in(app, "alice"):
        pass
    async with client_of(app) as c:
        assert (await c.post("/api/auth/login", json={"username": "alice", "password": WRONG})).status_code == 401
        assert (await c.post("/api/auth/login", json={"username": "nobody", "password": WRONG})).status_code == 401
        assert (await c.post("/api/auth/login", json={"username": "alice"})).status_code == 422  # no attempt
    rows = await log_rows("audit")
    assert [(r.action, r.username, r.user_id) for r in rows] == [
        ("auth.sign_in", "alice", alice.user_id), ("auth.sign_in_failed", "alice", None),
        ("auth.sign_in_failed", "nobody", None)]
    assert rows[1].details == {"ip": "203.0.113.9"}
    async with fable.db.reading() as s:
        everything = await s.scalar(text("SELECT string_agg(row_to_json(app_logs)::text, ' ') FROM app_logs"))
    assert WRONG not in everything


async def test_api_keys_created_and_revoked(app: Starlette, bob: Caller, log_rows: Rows) -> None:
    async with signed_in(app, "bob") as c:
        made = (await c.post("/api/api-keys", json={"name": "laptop", "scope": "read"})).json()
        assert (await c.post("/api/api-keys", json={"name": ""})).status_code == 422
        assert (await c.delete("/api/api-keys/999999")).status_code == 404
        assert (await c.delete(f"/api/api-keys/{made['id']}")).status_code == 200
    rows = [r for r in await log_rows("audit") if r.action.startswith("apikey.")]
    assert [(r.action, r.username, r.details) for r in rows] == [
        ("apikey.create", "bob", {"target": {"kind": "api_key", "id": made["id"], "name": "laptop"}, "scope": "read"}),
        ("apikey.revoke", "bob", {"target": {"kind": "api_key", "id": made["id"], "name": "laptop"}})]
    assert made["key"] not in str([r.details for r in rows])


async def test_share_change_and_unshare(call: Call, fable: Fable, alice: Caller, bob: Caller, log_rows: Rows) -> None:
    carol = await make_user(fable, "carol", password=None)
    project = await call("create_project", title="Garden")
    shared = await call("share", project_id=project["id"], with_user="bob")
    await call("share", project_id=project["id"], with_user="bob")  # no change: nothing to audit
    await call("share", project_id=project["id"], with_user="bob", permission="editor")
    with pytest.raises(InvalidInput):
        await call("share", project_id=project["id"], with_user="alice")
    with pytest.raises(NotFound):
        await call("unshare", share_id=shared["id"], as_=carol)
    await call("unshare", share_id=shared["id"])
    rows = await log_rows("audit")
    assert [(r.action, r.user_id, r.surface) for r in rows] == [
        ("share.create", alice.user_id, "internal"), ("share.change", alice.user_id, "internal"),
        ("share.revoke", alice.user_id, "internal")]
    assert rows[0].details == {"target": {"kind": "share", "id": shared["id"]}, "item": {"project_id": project["id"]},
                               "with_user": "bob", "permission": "viewer"}
    assert rows[2].details == {"target": {"kind": "share", "id": shared["id"]}, "item": {"project_id": project["id"]}}
