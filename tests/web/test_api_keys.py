"""API keys over HTTP: create once, list, revoke; Bearer on every /api route; scopes; the toolsets
its MCP client is offered, and the toolsets to choose from."""

from __future__ import annotations

import httpx
from starlette.applications import Starlette
from support.web import BASE, error_of, make_client

from fable_core.tools.caller import Caller
from fable_core.tools.toolsets import TOOLSETS


async def _key(session: httpx.AsyncClient, scope: str = "write", name: str = "script") -> dict:
    r = await session.post("/api/api-keys", json={"name": name, "scope": scope})
    assert r.status_code == 201, r.text
    return r.json()


async def test_create_shows_the_key_once_with_mcp_configs(as_alice: httpx.AsyncClient) -> None:
    created = await _key(as_alice)
    key = created["key"]
    assert key.startswith(f"fable_{created['prefix']}_")
    http = created["mcp_config"]["http"]["mcpServers"]["fable"]
    assert http == {"type": "http", "url": f"{BASE}/mcp", "headers": {"Authorization": f"Bearer {key}"}}
    stdio = created["mcp_config"]["stdio"]["mcpServers"]["fable"]
    assert stdio["args"] == ["mcp", "--remote", f"{BASE}/mcp"] and stdio["env"] == {"FABLE_API_KEY": key}
    listed = (await as_alice.get("/api/api-keys")).json()["items"]
    assert [(k["name"], k["prefix"], k["scope"]) for k in listed] == [("script", created["prefix"], "write")]
    assert key not in str(listed) and "key" not in listed[0]


async def test_bearer_works_on_api_routes_and_stamps_last_use(as_alice: httpx.AsyncClient, app: Starlette) -> None:
    key = (await _key(as_alice))["key"]
    async with make_client(app, authorization=f"Bearer {key}") as script:   # no cookie, no Origin
        r = await script.post("/api/notes", json={"title": "From a script"})
        assert r.status_code == 200, r.text
        assert (await script.get("/api/notes")).json()["items"][0]["title"] == "From a script"
        assert (await script.get("/api/auth/me")).json()["auth"] == "api_key"
        r = await script.post("/api/api-keys", json={"name": "another"})
        assert r.status_code == 403   # keys do not mint keys
    listed = (await as_alice.get("/api/api-keys")).json()["items"]
    assert listed[0]["last_used_at"] is not None


async def test_read_scope_key_is_refused_on_unsafe_methods(
    as_alice: httpx.AsyncClient, app: Starlette, row_counts
) -> None:
    note = (await as_alice.post("/api/notes", json={"title": "Kept"})).json()
    key = (await _key(as_alice, scope="read"))["key"]
    before = await row_counts()
    async with make_client(app, authorization=f"Bearer {key}") as reader:
        assert (await reader.get(f"/api/notes/{note['id']}")).status_code == 200
        for method, path, body in [("POST", "/api/notes", {"title": "x"}),
                                   ("PATCH", f"/api/notes/{note['id']}", {"title": "y"}),
                                   ("DELETE", f"/api/notes/{note['id']}", None),
                                   ("POST", "/api/tools/create_note", {"title": "z"})]:
            r = await reader.request(method, path, json=body)
            assert r.status_code == 403 and error_of(r)["type"] == "forbidden", (method, path)
    assert await row_counts() == before



async def test_the_tool_scope_decides_not_the_http_method(as_alice: httpx.AsyncClient, app: Starlette) -> None:
    """A read key may call a read tool over POST, as it may over MCP; a write tool stays refused."""
    await as_alice.post("/api/notes", json={"title": "Readable", "tags": ["kept"]})
    key = (await _key(as_alice, scope="read"))["key"]
    async with make_client(app, authorization=f"Bearer {key}") as reader:
        r = await reader.post("/api/tools/list_notes", json={})
        assert r.status_code == 200, r.text
        assert [n["title"] for n in r.json()["items"]] == ["Readable"]
        r = await reader.post("/api/tools/list_tags", json={})
        assert r.status_code == 200 and "kept" in r.text, r.text
        r = await reader.post("/api/tools/update_note", json={"note_id": 1, "title": "no"})
        assert r.status_code == 403 and error_of(r)["type"] == "forbidden"

async def test_revoke(as_alice: httpx.AsyncClient, app: Starlette) -> None:
    created = await _key(as_alice)
    async with make_client(app, authorization=f"Bearer {created['key']}") as script:
        assert (await script.get("/api/notes")).status_code == 200
        r = await as_alice.delete(f"/api/api-keys/{created['id']}")
        assert r.status_code == 200 and r.json() == {"id": created["id"], "deleted": True}
        r = await script.get("/api/notes")
        assert r.status_code == 401 and error_of(r)["type"] == "unauthenticated"
    assert (await as_alice.get("/api/api-keys")).json()["items"] == []


async def test_another_users_key_is_404_and_survives(
    alice: Caller, as_alice: httpx.AsyncClient, as_bob: httpx.AsyncClient, row_counts
) -> None:
    created = await _key(as_alice)
    before = await row_counts()
    r = await as_bob.delete(f"/api/api-keys/{created['id']}")
    assert r.status_code == 404 and error_of(r)["type"] == "not_found"
    for not_an_id in ("abc", "%C2%B2"):  # '²' passes str.isdigit but is no id
        r = await as_bob.delete(f"/api/api-keys/{not_an_id}")
        assert r.status_code == 422
    assert await row_counts() == before
    assert len((await as_alice.get("/api/api-keys")).json()["items"]) == 1


async def test_bad_key_requests(as_alice: httpx.AsyncClient, app: Starlette, row_counts) -> None:
    before = await row_counts()
    for body in ({"name": ""}, {"name": "x", "scope": "admin"}, {"name": "x", "extra": 1}):
        r = await as_alice.post("/api/api-keys", json=body)
        assert r.status_code == 422, body
    assert await row_counts() == before
    async with make_client(app, authorization="Bearer fable_nope_nope") as c:
        assert (await c.get("/api/notes")).status_code == 401
    async with make_client(app, authorization="Basic YWxpY2U6eA==") as c:
        assert (await c.get("/api/notes")).status_code == 401


async def test_a_keys_toolsets_are_chosen_at_creation_and_changed(as_alice: httpx.AsyncClient) -> None:
    r = await as_alice.post("/api/api-keys", json={"name": "cursor", "toolsets": ["default", "calendar", "feeds"]})
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["toolsets"] == ["default", "calendar", "feeds"]
    r = await as_alice.patch(f"/api/api-keys/{created['id']}", json={"toolsets": ["all"]})
    assert r.status_code == 200 and r.json()["toolsets"] == ["all"], r.text
    assert (await as_alice.get("/api/api-keys")).json()["items"][0]["toolsets"] == ["all"]
    r = await as_alice.patch(f"/api/api-keys/{created['id']}", json={"toolsets": None})  # the server's default
    assert r.status_code == 200 and "toolsets" not in r.json(), r.text
    assert "toolsets" not in (await as_alice.get("/api/api-keys")).json()["items"][0]


async def test_a_refused_toolsets_change_names_the_bad_entry_and_changes_nothing(
    as_alice: httpx.AsyncClient, as_bob: httpx.AsyncClient
) -> None:
    created = (await as_alice.post("/api/api-keys", json={"name": "cursor", "toolsets": ["default", "feeds"]})).json()
    for body in ({"toolsets": ["default", "nope", "calendar"]}, {"toolsets": []}, {"toolsets": [""]}, {}):
        r = await as_alice.patch(f"/api/api-keys/{created['id']}", json=body)
        assert r.status_code == 422, body
    r = await as_alice.patch(f"/api/api-keys/{created['id']}", json={"toolsets": ["default", "nope", "calendar"]})
    assert error_of(r)["message"].startswith("toolsets: unknown nope; use all, default, a toolset")
    r = await as_bob.patch(f"/api/api-keys/{created['id']}", json={"toolsets": ["all"]})  # not his
    assert r.status_code == 404 and error_of(r)["type"] == "not_found"
    r = await as_alice.post("/api/api-keys", json={"name": "other", "toolsets": ["nope"]})
    assert r.status_code == 422 and "unknown nope" in error_of(r)["message"]
    assert [k["toolsets"] for k in (await as_alice.get("/api/api-keys")).json()["items"]] == [["default", "feeds"]]


async def test_the_toolsets_to_choose_from_are_what_an_mcp_client_may_use(
    as_alice: httpx.AsyncClient, app: Starlette, alice: Caller
) -> None:
    """GET /api/toolsets, for choosing a key's toolsets: each with its line and its tools' count;
    a signed-in admin's own account and admin tools, which no MCP client runs, are not among them."""
    r = await as_alice.get("/api/toolsets")
    assert r.status_code == 200, r.text
    lines = r.json()["toolsets"]
    assert alice.is_admin and [line["name"] for line in lines][:3] == ["notes", "tasks", "projects"]
    assert {"account", "admin", "toolsets"}.isdisjoint(line["name"] for line in lines)
    assert all(set(line) == {"name", "about", "tools"} and line["tools"] > 0 for line in lines)
    assert {line["name"]: line["about"] for line in lines}.items() <= TOOLSETS.items()
    key = (await _key(as_alice, scope="read"))["key"]
    async with make_client(app, authorization=f"Bearer {key}") as reader:  # a read key counts read tools
        read = {line["name"]: line["tools"] for line in (await reader.get("/api/toolsets")).json()["toolsets"]}
    assert read["notes"] < {line["name"]: line["tools"] for line in lines}["notes"]
