"""``list_logs``: admins read every category, filtered and paged; nobody else may, on any
surface. Requests are logged with their route and duration, unexpected failures with their
traceback."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from mcp import Client
from pydantic import BaseModel
from sqlalchemy import insert
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from support.logs import Call, Rows, client_of, signed_in

from fable_core.db.models import AppLog
from fable_core.errors import FableError, InvalidInput
from fable_core.identity.accounts import create_api_key
from fable_core.infra.events import EventBus
from fable_core.runtime import Fable
from fable_core.tools import Context, Registry, tool
from fable_core.tools.caller import Caller
from fable_core.tools.dispatcher import Dispatcher, InternalError
from fable_mcp.server import build_server
from fable_web.context import WebContext
from fable_web.errors import exception_handlers
from fable_web.requestlog import RequestLog

crashing = Registry()


class Nothing(BaseModel):
    pass


@tool(group="test", title="Crash", scope="read", registry=crashing)
async def crash(ctx: Context) -> Nothing:
    """Fail unexpectedly."""
    raise RuntimeError("boom: secret detail 5e1d")


NOW = datetime.now(UTC)


async def _seed(fable: Fable, alice: Caller, bob: Caller) -> None:
    rows = [
        {"category": "audit", "action": "user.disable", "user_id": alice.user_id, "username": "alice",
         "created_at": NOW - timedelta(hours=5), "details": {"target": {"kind": "user", "id": bob.user_id}}},
        {"category": "audit", "action": "share.create", "user_id": bob.user_id, "username": "bob",
         "created_at": NOW - timedelta(hours=4), "details": {"with_user": "alice"}},
        {"category": "usage", "action": "list_notes", "user_id": bob.user_id, "username": "bob",
         "created_at": NOW - timedelta(hours=3), "duration_ms": 2.5},
        {"category": "error", "action": "search_notes", "user_id": bob.user_id, "username": "bob",
         "created_at": NOW - timedelta(hours=2), "error_type": "internal_error", "error_message": "kaput 100%",
         "traceback": "Traceback ..."},
        {"category": "request", "action": "/api/notes", "method": "GET", "status_code": 200, "duration_ms": 3.0,
         "user_id": alice.user_id, "username": "alice", "created_at": NOW - timedelta(hours=1)},
    ]
    async with fable.db.transaction() as s:
        await s.execute(insert(AppLog), rows)


async def test_filters_and_paging(call: Call, fable: Fable, alice: Caller, bob: Caller) -> None:
    await _seed(fable, alice, bob)

    async def actions(**filters: Any) -> list[str]:
        # until NOW: not the usage rows of these very calls, which may be written meanwhile
        return [e["action"] for e in (await call("list_logs", **({"until": NOW.isoformat()} | filters)))["items"]]

    assert await actions() == ["/api/notes", "search_notes", "list_notes", "share.create", "user.disable"]
    assert await actions(category="audit") == ["share.create", "user.disable"]
    assert await actions(user="BOB") == ["search_notes", "list_notes", "share.create"]
    assert await actions(action="share.") == ["share.create"]
    assert await actions(action="user_") == []  # "_" is a character, not a wildcard
    assert await actions(query="100%") == ["search_notes"]
    assert await actions(query="with_user") == ["share.create"]
    assert await actions(since=(NOW - timedelta(hours=3, minutes=1)).isoformat(),
                         until=(NOW - timedelta(minutes=90)).isoformat()) == ["search_notes", "list_notes"]
    [error] = (await call("list_logs", category="error"))["items"]
    assert error["traceback"] == "Traceback ..." and error["error_message"] == "kaput 100%"
    [request] = (await call("list_logs", category="request"))["items"]
    assert set(request) == {"id", "at", "category", "action", "user", "user_id", "method", "status", "duration_ms"}
    [disable] = (await call("list_logs", action="user.disable"))["items"]
    assert disable["target"] == {"kind": "user", "id": bob.user_id} and "details" not in disable

    seen, cursor = [], None
    while True:
        page = await call("list_logs", limit=2, until=NOW.isoformat(), **({"cursor": cursor} if cursor else {}))
        seen += [e["action"] for e in page["items"]]
        if (cursor := page.get("next_cursor")) is None:
            break
    assert seen == await actions()


@pytest.mark.parametrize("bad", [
    {"category": "debug"}, {"limit": 0}, {"limit": 201}, {"cursor": "nonsense"}, {"since": "yesterday"},
    {"since": NOW.isoformat(), "until": (NOW - timedelta(days=1)).isoformat()}, {"query": ""}, {"user": "x" * 201},
])
async def test_bad_input_is_refused(call: Call, bad: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        await call("list_logs", **bad)


async def test_admins_only_on_every_surface(app: Starlette, fable: Fable, call: Call, alice: Caller,
                                            bob: Caller) -> None:
    with pytest.raises(FableError) as refused:
        await call("list_logs", as_=bob)
    assert refused.value.type == "forbidden"
    async with fable.db.transaction() as s:
        _, bob_key = await create_api_key(s, bob.user_id, "bob's")
        _, alice_key = await create_api_key(s, alice.user_id, "alice's")
    async with client_of(app, authorization=f"Bearer {bob_key}") as c:
        for r in (await c.get("/api/logs"), await c.post("/api/tools/list_logs", json={})):
            assert r.status_code == 403 and r.json()["error"]["type"] == "forbidden", r.text
    async with signed_in(app, "bob") as c:
        assert (await c.get("/api/logs")).status_code == 403
    async with client_of(app, authorization=f"Bearer {alice_key}") as c:  # an admin's key: not the logs
        refused_key = await c.get("/api/logs", params={"category": "audit"})
        assert refused_key.status_code == 403 and refused_key.json()["error"]["details"]["reason"] == "session_only"
    async with signed_in(app, "alice") as c:  # the admin, signed in
        assert (await c.get("/api/logs", params={"category": "audit"})).status_code == 200
        r = await c.get("/api/logs", params={"category": "nonsense"})
        assert r.status_code == 422 and r.json()["error"]["type"] == "invalid_input"
    async with Client(build_server(fable, replace(bob, surface="mcp"))) as client:
        assert "list_logs" not in [t.name for t in (await client.list_tools()).tools]
        assert (await client.call_tool("list_logs", {})).is_error
    async with Client(build_server(fable, replace(alice, surface="mcp", credential="key"))) as client:
        assert "list_logs" not in [t.name for t in (await client.list_tools()).tools]
        assert (await client.call_tool("list_logs", {"category": "audit"})).is_error
    async with Client(build_server(fable, replace(alice, surface="mcp"))) as client:  # fable mcp on her machine
        assert not (await client.call_tool("list_logs", {"category": "audit"})).is_error
        assert (await client.call_tool("list_logs", {"limit": 0})).is_error


async def test_requests_are_logged_with_route_and_duration(app: Starlette, fable: Fable, call: Call, alice: Caller,
                                                           log_rows: Rows) -> None:
    note = await call("create_note", title="Seeds")
    async with fable.db.transaction() as s:
        _, key = await create_api_key(s, alice.user_id, "k")
    async with client_of(app, authorization=f"Bearer {key}") as c:
        assert (await c.get(f"/api/notes/{note['id']}")).status_code == 200
        assert (await c.get("/api/notes/987654")).status_code == 404
        assert (await c.get("/api/no/such/thing")).status_code == 404
    async with client_of(app) as c:
        assert (await c.get("/api/notes")).status_code == 401
        assert (await c.get("/api/health")).status_code in (200, 503)  # polled: not logged
    rows = await log_rows("request")
    assert [(r.method, r.endpoint, r.status_code, r.username) for r in rows] == [
        ("GET", "/api/notes/{note_id}", 200, "alice"), ("GET", "/api/notes/{note_id}", 404, "alice"),
        ("GET", "/api/{rest}", 404, None), ("GET", "/api/notes", 401, None)]
    assert all(r.duration_ms is not None and r.duration_ms > 0 for r in rows)
    assert str(note["id"]) not in str([r.endpoint for r in rows])


async def test_an_unexpected_failure_leaves_its_traceback_for_admins(fable: Fable, call: Call, alice: Caller,
                                                                     bob: Caller) -> None:
    dispatcher = Dispatcher(fable.db, fable.settings, registry=crashing, events=EventBus(),
                            usage=fable.dispatcher.usage)
    with pytest.raises(InternalError) as raised:
        await dispatcher.call("crash", {}, bob)
    assert "5e1d" not in str(raised.value.to_dict())
    await fable.dispatcher.usage.flush()
    [row] = (await call("list_logs", category="error"))["items"]
    assert row["action"] == "crash" and row["user"] == "bob"
    assert "RuntimeError: boom: secret detail 5e1d" in row["traceback"]


async def test_an_unhandled_request_error_leaves_its_traceback_and_a_500(fable: Fable, log_rows: Rows) -> None:
    async def boom(request: Request) -> Response:
        raise RuntimeError("kaboom: detail 77aa")

    app = Starlette(routes=[Route("/api/boom/{n:int}", boom)], exception_handlers=exception_handlers,
                    middleware=[Middleware(RequestLog, usage=fable.dispatcher.usage)])
    app.state.web = WebContext.build(fable)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
        r = await c.get("/api/boom/5")
    assert r.status_code == 500 and "77aa" not in r.text
    [error] = await log_rows("error")
    assert (error.action, error.method, error.status_code, error.error_type) == (
        "/api/boom/{n}", "GET", 500, "RuntimeError")
    assert error.traceback and "RuntimeError: kaboom: detail 77aa" in error.traceback
    [request] = await log_rows("request")
    assert (request.endpoint, request.status_code) == ("/api/boom/{n}", 500)
