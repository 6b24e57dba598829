"""The account and admin operations are tools on REST: a bad body is a clear 4xx that changes
nothing, an API key and a regular user are refused, each call writes one usage row (and, for a
change, one audit row) and OpenAPI describes every body and answer."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import select
from starlette.applications import Starlette
from support.mcp_clients import make_key
from support.web import error_of, make_client, signed_in

from fable_core.capabilities import load_capabilities
from fable_core.db.models import AppLog
from fable_core.runtime import Fable
from fable_core.tools import REGISTRY
from fable_core.tools.caller import Caller

load_capabilities()
ACCOUNT = [t for t in REGISTRY if t.group == "account" and t.route is not None
           and t.module.startswith("fable_core.identity.") and not t.module.startswith("fable_core.identity.oauth")]
ADMIN = [t for t in REGISTRY if t.route is not None and t.route.path.startswith("/admin")]


def test_the_account_and_admin_routes_are_tools() -> None:
    routes = {(t.route.method, t.route.path) for t in ACCOUNT + ADMIN if t.route is not None}
    assert routes == {
        ("GET", "/auth/me"), ("PATCH", "/api-keys/{key_id}"),
        ("GET", "/admin/tool-usage"), ("POST", "/auth/password"), ("PUT", "/auth/email"),
        ("POST", "/auth/email/verification"), ("GET", "/auth/sessions"), ("DELETE", "/auth/sessions/{session_id}"),
        ("GET", "/api-keys"), ("POST", "/api-keys"), ("DELETE", "/api-keys/{key_id}"),
        ("GET", "/admin/users"), ("PATCH", "/admin/users/{user_id}"), ("DELETE", "/admin/users/{user_id}"),
        ("GET", "/admin/invitations"), ("POST", "/admin/invitations"),
        ("DELETE", "/admin/invitations/{invitation_id}"), ("GET", "/admin/audit"),
        ("GET", "/admin/settings"), ("PATCH", "/admin/settings"), ("GET", "/admin/registration"),
        ("PUT", "/admin/registration"), ("GET", "/admin/mail"), ("PUT", "/admin/mail"), ("DELETE", "/admin/mail"),
        ("POST", "/admin/mail/test")}
    assert not [t.name for t in ACCOUNT + ADMIN if t.agents]  # the UI's and the operator's, never an agent's
    assert all(t.group == "admin" for t in ADMIN)


@pytest.mark.parametrize(("method", "path", "body"), [
    ("POST", "/api/api-keys", {"name": ""}),
    ("POST", "/api/api-keys", {"name": "x", "scope": "admin"}),
    ("POST", "/api/admin/invitations", {"expires_in_hours": 0}),
    ("POST", "/api/admin/invitations", {"email": "not an address"}),
    ("PATCH", "/api/admin/users/2", {}),
    ("PATCH", "/api/admin/users/2", {"is_active": "no"}),
    ("PUT", "/api/admin/registration", {"mode": "sometimes"}),
    ("PATCH", "/api/admin/settings", {"public_url": "ftp://x"}),
    ("PUT", "/api/admin/mail", {"host": "bad host!", "sender": "fable@example.com"}),
    ("PUT", "/api/admin/mail", {"host": "smtp.example.com", "sender": "fable@example.com", "password": "p"}),
    ("PUT", "/api/auth/email", {"email": "a@example.com", "password": "x", "extra": 1}),
    ("POST", "/api/auth/password", {"current_password": "x"}),
    ("GET", "/api/admin/audit?limit=0", None),
])
async def test_a_bad_body_is_a_clear_4xx_and_changes_nothing(
    as_alice: httpx.AsyncClient, bob: Caller, row_counts, method: str, path: str, body: dict[str, Any] | None,
) -> None:
    before = await row_counts()
    r = await as_alice.request(method, path, json=body)
    assert r.status_code == 422, r.text
    assert error_of(r)["type"] == "invalid_input" and error_of(r)["message"]
    assert await row_counts() == before


async def test_a_regular_user_is_refused_every_admin_tool(alice: Caller, as_bob: httpx.AsyncClient, row_counts) -> None:
    before = await row_counts()
    for t in ADMIN:
        assert t.route is not None
        path = t.route.path.replace("{user_id}", str(alice.user_id)).replace("{invitation_id}", "1")
        body = None if t.route.method in ("GET", "DELETE") else {}
        r = await as_bob.request(t.route.method, f"/api{path}", json=body)
        assert r.status_code == 403 and error_of(r)["message"] == "only an admin may do this", (t.name, r.text)
    assert await row_counts() == before


async def test_an_api_key_is_refused_every_session_only_tool(app: Starlette, fable: Fable, alice: Caller,
                                                            row_counts) -> None:
    key = await make_key(fable, alice)  # an admin's write key
    before = await row_counts()
    async with make_client(app, authorization=f"Bearer {key}") as agent:
        for t in [t for t in ACCOUNT + ADMIN if t.credentials == "session"]:
            assert t.route is not None
            path = t.route.path.replace("{user_id}", "2").replace("{invitation_id}", "1") \
                .replace("{session_id}", "1").replace("{key_id}", "1")
            r = await agent.request(t.route.method, f"/api{path}", json={"no": "matter"})
            assert r.status_code == 403 and error_of(r)["details"]["reason"] == "session_only", (t.name, r.text)
            r = await agent.post(f"/api/tools/{t.name}", json={})
            assert r.status_code == 403 and error_of(r)["details"]["reason"] == "session_only", (t.name, r.text)
        assert (await agent.get("/api/auth/me")).json()["auth"] == "api_key"  # who am I: any credential
    assert await row_counts() == before


async def _logs(fable: Fable, action: str) -> list[AppLog]:
    await fable.dispatcher.usage.flush()
    async with fable.db.reading() as s:
        return list(await s.scalars(select(AppLog).where(AppLog.action == action).order_by(AppLog.id)))


async def test_each_call_writes_one_usage_row_and_each_change_one_audit_row(
    as_alice: httpx.AsyncClient, fable: Fable, alice: Caller, bob: Caller,
) -> None:
    r = await as_alice.patch(f"/api/admin/users/{bob.user_id}", json={"role": "admin"})
    assert r.status_code == 200 and r.json()["role"] == "admin"
    r = await as_alice.post("/api/api-keys", json={"name": "laptop"})
    assert r.status_code == 201
    usage = [(row.category, row.user_id, row.surface) for row in await _logs(fable, "update_user")]
    assert usage == [("usage", alice.user_id, "web")]
    assert [(row.category, row.surface) for row in await _logs(fable, "create_api_key")] == [("usage", "web")]
    [role] = await _logs(fable, "user.role")
    assert (role.category, role.user_id, role.surface) == ("audit", alice.user_id, "web")
    assert role.details == {"target": {"kind": "user", "id": bob.user_id, "name": "bob"},
                            "role": {"from": "user", "to": "admin"}}
    [created] = await _logs(fable, "apikey.create")
    assert created.details["scope"] == "write" and "key" not in str(created.details).lower().replace("api_key", "")


async def test_a_refused_call_writes_its_usage_row_and_no_audit(alice: Caller, as_bob: httpx.AsyncClient,
                                                                fable: Fable) -> None:
    r = await as_bob.delete(f"/api/admin/users/{alice.user_id}")
    assert r.status_code == 403
    [row] = await _logs(fable, "delete_user")
    assert (row.category, row.error_type) == ("usage", "forbidden")
    assert await _logs(fable, "user.delete") == []


async def test_openapi_describes_every_body_and_answer(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/api/openapi.json")).json()
    schemas = doc["components"]["schemas"]

    def resolved(schema: dict[str, Any]) -> dict[str, Any]:
        ref = schema.get("$ref", "")
        return schemas[ref.rsplit("/", 1)[1]] if ref else schema

    for t in ACCOUNT + ADMIN:
        assert t.route is not None
        operation = doc["paths"][f"/api{t.route.path}"][t.route.method.lower()]
        answer = resolved(operation["responses"][str(t.route.status)]["content"]["application/json"]["schema"])
        assert answer.get("properties"), (t.name, answer)  # never "any object"
        if "requestBody" in operation:
            body = resolved(operation["requestBody"]["content"]["application/json"]["schema"])
            assert body.get("properties"), t.name
        assert operation["tags"] == [t.group]
    me = resolved(doc["paths"]["/api/auth/me"]["get"]["responses"]["200"]["content"]["application/json"]["schema"])
    assert {"user", "auth", "scope", "csrf_token"} <= set(me["properties"])
    # the routes that stayed hand-written (they set the session cookie, or answer before sign-in)
    for method, path, status in [
        ("post", "/api/auth/register", "201"), ("post", "/api/auth/login", "200"),
        ("post", "/api/auth/forgot-password", "202"), ("post", "/api/auth/reset-password", "200"),
        ("post", "/api/auth/verify-email", "200"), ("get", "/api/auth/registration", "200"),
        ("get", "/api/auth/methods", "200"), ("get", "/api/health", "200"), ("post", "/api/render", "200"),
        ("get", "/api/oauth/authorization", "200"), ("post", "/api/oauth/authorization", "200"),
    ]:
        answer = resolved(doc["paths"][path][method]["responses"][status]["content"]["application/json"]["schema"])
        assert answer.get("properties"), (path, answer)


async def test_ending_this_browsers_own_session_clears_its_cookie(app: Starlette, alice: Caller) -> None:
    async with signed_in(app, "alice") as browser:
        [mine] = (await browser.get("/api/auth/sessions")).json()["items"]
        r = await browser.delete(f"/api/auth/sessions/{mine['id']}")
        assert r.status_code == 200 and 'fable_session=""' in r.headers["set-cookie"]
        assert (await browser.get("/api/notes")).status_code == 401


async def test_who_am_i_says_the_time_zone_and_whether_it_was_chosen(fable: Fable, alice: Caller) -> None:
    """The web UI takes the browser's zone only while none was chosen (issue 38, item 1)."""
    await fable.call("reset_setting", {"key": "timezone"}, alice)
    me = await fable.call("get_me", {}, alice)
    assert (me["timezone"], me["timezone_chosen"]) == ("UTC", False)
    await fable.call("set_setting", {"key": "timezone", "value": "Asia/Tokyo"}, alice)
    me = await fable.call("get_me", {}, alice)
    assert (me["timezone"], me["timezone_chosen"]) == ("Asia/Tokyo", True)
    await fable.call("set_setting", {"key": "timezone", "value": "UTC"}, alice)
    assert (await fable.call("get_me", {}, alice))["timezone_chosen"] is True, "UTC chosen is chosen"
