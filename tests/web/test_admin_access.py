"""No admin action for anyone but an admin in a signed-in session: every /api/admin route
refuses the anonymous (401), a user's session (403), a user's API key and an admin's own API
key (403, session only), and changes nothing; the tools behind them are session-only and
offered to no agent."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import func, select, text
from starlette.applications import Starlette
from support.mcp_clients import make_key
from support.web import BASE, error_of, make_client, signed_in

from fable_core.capabilities import load_capabilities
from fable_core.db.models import AppLog
from fable_core.runtime import Fable
from fable_core.tools import REGISTRY, Tool
from fable_core.tools.caller import Caller

load_capabilities()
ADMIN_TOOLS: list[Tool] = [t for t in REGISTRY if t.route is not None and t.route.path.startswith("/admin")]
MAIL = {"host": "127.0.0.1", "port": 2525, "tls": "none", "sender": "fable@example.com"}
# a valid request for each route, so that only who is asking can make it fail
BODIES: dict[tuple[str, str], dict[str, Any] | None] = {
    ("GET", "/api/admin/users"): None,
    ("PATCH", "/api/admin/users/{user_id}"): {"is_active": False, "role": "admin"},
    ("DELETE", "/api/admin/users/{user_id}"): None,
    ("GET", "/api/admin/invitations"): None,
    ("POST", "/api/admin/invitations"): {"email": "eve@example.com"},
    ("DELETE", "/api/admin/invitations/{invitation_id}"): None,
    ("GET", "/api/admin/audit"): None,
    ("GET", "/api/admin/settings"): None,
    ("PATCH", "/api/admin/settings"): {"registration": "open", "public_url": "https://evil.example"},
    ("GET", "/api/admin/registration"): None,
    ("PUT", "/api/admin/registration"): {"mode": "open"},
    ("GET", "/api/admin/mail"): None,
    ("PUT", "/api/admin/mail"): {**MAIL, "username": "eve", "password": "hers"},
    ("DELETE", "/api/admin/mail"): None,
    ("POST", "/api/admin/mail/test"): {"to": "eve@example.com"},
    ("GET", "/api/admin/tool-usage"): None,
}


def test_every_admin_route_is_tested_here() -> None:
    routes = {(t.route.method, f"/api{t.route.path}") for t in ADMIN_TOOLS if t.route is not None}
    assert routes == set(BODIES)
    assert all(t.admin and t.credentials == "session" for t in ADMIN_TOOLS)


def test_administration_is_offered_to_no_agent() -> None:
    """Account and instance administration runs for an admin in person (the web UI, the
    operator's shell): never within reach of API keys (MCP) or of the assistant."""
    assert not [t.name for t in ADMIN_TOOLS if t.agents]
    admin_key = Caller(user_id=1, role="admin", surface="mcp", credential="key")
    assert not {t.name for t in ADMIN_TOOLS} & {t.name for t in REGISTRY.for_caller(admin_key)}
    # the model server's, the groups' and the ones that run the instance
    assert {t.name for t in REGISTRY if t.admin} == {
        "list_models", "pull_model", "delete_model", "warm_model", "create_group", "delete_group", "list_logs",
        "backup_instance", "list_oauth_clients", "disable_oauth_client", *(t.name for t in ADMIN_TOOLS)}
    # OAuth client registrations: the web UI's Settings page (and an operator's script), never an agent
    assert not REGISTRY.get("list_oauth_clients").agents and not REGISTRY.get("disable_oauth_client").agents
    # a backup holds every account's password and key hashes: an operator's script (REST) or the CLI
    # takes it, never an agent (MCP, the assistant)
    assert not REGISTRY.get("backup_instance").agents and not REGISTRY.get("restore_backup").agents


async def _state(fable: Fable) -> tuple[Any, ...]:
    async with fable.db.engine.connect() as conn:
        users = (await conn.execute(text("SELECT id, role, is_active FROM users ORDER BY id"))).all()
        instance = (await conn.execute(text("SELECT key, value FROM instance_settings ORDER BY key"))).all()
        tokens = (await conn.execute(text("SELECT id, used_at FROM account_tokens ORDER BY id"))).all()
        audits = (await conn.execute(select(func.count()).select_from(AppLog).where(AppLog.category == "audit")))
        return users, instance, tokens, audits.scalar_one()


async def _each_route(client: httpx.AsyncClient, bob: Caller, invitation_id: int) -> list[tuple[str, httpx.Response]]:
    answers = []
    for (method, path), body in BODIES.items():
        url = path.replace("{user_id}", str(bob.user_id)).replace("{invitation_id}", str(invitation_id))
        answers.append((f"{method} {path}", await client.request(method, url, json=body)))
    return answers


@pytest.fixture
async def invitation(as_alice: httpx.AsyncClient) -> int:
    r = await as_alice.post("/api/admin/invitations", json={})
    assert r.status_code == 201
    return int(r.json()["id"])


async def test_the_anonymous_a_user_and_any_api_key_are_refused_everywhere(
    app: Starlette, fable: Fable, alice: Caller, bob: Caller, invitation: int, row_counts,
) -> None:
    admin_key, user_key = await make_key(fable, alice), await make_key(fable, bob)
    async with make_client(app, origin=BASE) as anonymous, signed_in(app, "bob") as user, \
            make_client(app, authorization=f"Bearer {admin_key}") as with_admin_key, \
            make_client(app, authorization=f"Bearer {user_key}") as with_user_key:
        before, rows = await _state(fable), await row_counts()
        for route, r in await _each_route(anonymous, bob, invitation):
            assert r.status_code == 401, (route, r.text)
        for route, r in await _each_route(user, bob, invitation):
            assert r.status_code == 403 and error_of(r)["message"] == "only an admin may do this", (route, r.text)
        for client in (with_admin_key, with_user_key):
            for route, r in await _each_route(client, bob, invitation):
                assert r.status_code == 403 and error_of(r)["details"]["reason"] == "session_only", (route, r.text)
    assert await _state(fable) == before and await row_counts() == rows


async def test_an_admin_demoted_on_another_replica_is_refused_before_the_cache_expires(
    app: Starlette, fable: Fable, alice: Caller, bob: Caller, row_counts,
) -> None:
    """Another process took alice's role away; this one still remembers her session as an
    admin's for up to two seconds, but no change is made with it."""
    async with signed_in(app, "alice") as stale:
        assert (await stale.get("/api/admin/users")).status_code == 200  # remembered from here on
        async with fable.db.transaction() as s:
            await s.execute(text("UPDATE users SET role = 'admin' WHERE id = :b"), {"b": bob.user_id})
            await s.execute(text("UPDATE users SET role = 'user' WHERE id = :a"), {"a": alice.user_id})
        before = await _state(fable)
        r = await stale.patch(f"/api/admin/users/{bob.user_id}", json={"is_active": False})
        assert r.status_code == 403 and error_of(r)["message"] == "only an admin may do this"
        r = await stale.put("/api/admin/registration", json={"mode": "closed"})
        assert r.status_code == 403
    assert await _state(fable) == before
