"""Streamable HTTP at /mcp: bearer keys, read scope, isolation, rebinding checks, metadata."""

from __future__ import annotations

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError
from sqlalchemy import select, update
from support.mcp_clients import (
    ResourceUpdates,
    data,
    http_connect,
    make_key,
    make_revocable_key,
    revoke_key,
)
from support.pace import scaled
from support.servers import serve

from fable_core.config import load_settings
from fable_core.db.models import ApiKey, User
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_mcp.http import create_app
from fable_web.app import create_app as create_web_app

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
ACCEPT = {"accept": "application/json, text/event-stream"}


async def _post(url: str, headers: dict[str, str] | None = None, body: dict | None = None) -> httpx.Response:
    async with httpx.AsyncClient(timeout=scaled(30)) as http:
        return await http.post(url, json=body or INITIALIZE, headers={**ACCEPT, **(headers or {})})


async def test_missing_key_is_401_pointing_at_the_resource_metadata(mcp_base_url: str) -> None:
    response = await _post(f"{mcp_base_url}/mcp")
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and "error=" not in challenge
    assert f'resource_metadata="{mcp_base_url}/.well-known/oauth-protected-resource/mcp"' in challenge


@pytest.mark.parametrize("header", ["Bearer fable_00000000_wrong", "Bearer", "Basic dXNlcjpwYXNz"])
async def test_wrong_key_is_401_invalid_token(mcp_base_url: str, alice: Caller, header: str) -> None:
    response = await _post(f"{mcp_base_url}/mcp", {"authorization": header})
    assert response.status_code == 401
    assert "www-authenticate" in response.headers
    assert response.json()["error"] in ("invalid_token", "unauthorized")


async def test_sdk_client_with_a_bad_key_cannot_connect(mcp_base_url: str) -> None:
    with pytest.raises(BaseExceptionGroup) as failed:
        async with http_connect(f"{mcp_base_url}/mcp", "fable_00000000_wrong"):
            pass
    assert failed.group_contains(MCPError)


async def test_protected_resource_metadata(mcp_base_url: str) -> None:
    async with httpx.AsyncClient() as http:
        for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
            meta = (await http.get(mcp_base_url + path)).json()
            assert meta["resource"] == f"{mcp_base_url}/mcp"
            assert meta["bearer_methods_supported"] == ["header"]
            assert meta["scopes_supported"] == ["read", "write"]


async def test_post_to_exactly_mcp_is_served_without_redirect(mcp_base_url: str, fable: Fable,
                                                                alice: Caller) -> None:
    key = await make_key(fable, alice)
    response = await _post(f"{mcp_base_url}/mcp", {"authorization": f"Bearer {key}"})
    assert response.status_code == 200, response.text
    assert "mcp-session-id" in response.headers


async def test_read_scope_key_lists_and_calls_only_read_tools(
    connect_fast, fable: Fable, call
) -> None:
    note = await call("create_note", title="Readable")
    async with connect_fast(scope="read") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        refused = await client.call_tool("create_note", {"title": "Sneaky"})
        refused_update = await client.call_tool("update_note", {"note_id": note["id"], "body": "x"})
        read = await client.call_tool("read_note", {"note_id": note["id"]})
    offered = {t.name for t in fable.registry if t.scope == "read" and not t.needs and t.agents  # no model here
               and t.credentials == "any"}  # nor what a person signed in runs
    assert names == offered and "create_note" not in names
    assert refused.is_error and refused.content[0].text.startswith("forbidden: create_note changes data")
    assert refused_update.is_error and not read.is_error
    listed = await call("list_notes")
    assert [n["title"] for n in listed["items"]] == ["Readable"]
    assert (await call("read_note", note_id=note["id"]))["body"] == ""


async def test_two_users_are_isolated(connect_fast, alice: Caller, bob: Caller) -> None:
    async with connect_fast(as_=alice) as as_alice:
        mine = data(await as_alice.call_tool("create_note", {"title": "Alice's diary"}))
    async with connect_fast(as_=bob) as as_bob:
        peek = await as_bob.call_tool("read_note", {"note_id": mine["id"]})
        listed = await as_bob.call_tool("list_notes", {})
        same_title = await as_bob.call_tool("create_note", {"title": "Alice's diary"})
        resources = await as_bob.list_resources()
    assert peek.is_error and peek.content[0].text.startswith(f"not_found: note {mine['id']} not found")
    assert data(listed)["items"] == []
    assert not same_title.is_error  # titles are unique per user, not across users
    assert [r.uri for r in resources.resources] == [f"fable://notes/{data(same_title)['id']}"]


async def test_a_session_is_bound_to_the_key_that_opened_it(mcp_base_url: str, fable: Fable,
                                                              alice: Caller, bob: Caller) -> None:
    """Another user's key, or the same user's read-scope key (handed to a less trusted agent),
    can neither use the session nor end it."""
    alice_key = await make_key(fable, alice)
    opened = await _post(f"{mcp_base_url}/mcp", {"authorization": f"Bearer {alice_key}"})
    session = opened.headers["mcp-session-id"]
    for other in (await make_key(fable, bob), await make_key(fable, alice, "read")):
        headers = {"authorization": f"Bearer {other}", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
        hijack = await _post(f"{mcp_base_url}/mcp", headers, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert hijack.status_code == 404
        async with httpx.AsyncClient(timeout=scaled(30)) as http:
            assert (await http.delete(f"{mcp_base_url}/mcp", headers=headers)).status_code == 404
    own = await _post(f"{mcp_base_url}/mcp", {"authorization": f"Bearer {alice_key}", "mcp-session-id": session,
                                              "mcp-protocol-version": "2025-11-25"},
                      {"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert own.status_code == 200


@pytest.mark.parametrize(("headers", "status"), [
    ({"host": "evil.example"}, 421),
    ({"origin": "http://evil.example"}, 403),
])
async def test_dns_rebinding_is_refused_before_authentication(mcp_base_url: str, headers, status) -> None:
    response = await _post(f"{mcp_base_url}/mcp", headers)
    assert response.status_code == status


async def test_allowed_hosts_admit_a_deployment_domain(fable: Fable, alice: Caller, settings) -> None:
    custom = load_settings({}, **{**settings.model_dump(),
                                  "fable_allowed_hosts": ["notes.example.org", "Wiki.Example.org:*"],
                                  "fable_base_url": "https://fable.example.com"})
    app = create_app(Fable(custom, fable.db))
    key = await make_key(fable, alice)
    auth = {"authorization": f"Bearer {key}"}
    async with serve(app) as base:
        for host, origin in (("notes.example.org", "https://notes.example.org"),
                             ("fable.example.com", "https://fable.example.com"), ("localhost", None),
                             # "name:*" is any port or none (behind a TLS proxy there is none); names
                             # are configured in any case
                             ("wiki.example.org", "https://wiki.example.org"),
                             ("wiki.example.org:8443", "https://wiki.example.org:8443")):
            headers = {**auth, "host": host} | ({"origin": origin} if origin else {})
            assert (await _post(f"{base}/mcp", headers)).status_code == 200, host
        for host in ("other.example.org", "notes.example.org:8443", "wiki.example.org.evil.example"):
            assert (await _post(f"{base}/mcp", {**auth, "host": host})).status_code == 421, host
        missing = await _post(f"{base}/mcp", {"host": "fable.example.com"})
        assert 'resource_metadata="https://fable.example.com/.well-known/' in missing.headers["www-authenticate"]


async def test_a_deactivated_users_key_stops_working(mcp_base_url: str, fable: Fable, alice: Caller) -> None:
    key = await make_key(fable, alice)
    async with http_connect(f"{mcp_base_url}/mcp", key) as client:
        assert (await client.list_tools()).tools
        async with fable.db.transaction() as session:
            await session.execute(update(User).where(User.id == alice.user_id).values(is_active=False))
        fable.keys.forget()  # what this process does when it changes a user; others follow within TTL
        with pytest.raises(MCPError):  # the SDK client reports the 401 as an error response
            await client.list_tools()


async def test_a_used_key_records_when_it_was_last_used(mcp_base_url: str, fable: Fable, alice: Caller) -> None:
    key = await make_key(fable, alice)
    assert (await _post(f"{mcp_base_url}/mcp", {"authorization": f"Bearer {key}"})).status_code == 200
    async with fable.db.transaction() as session:
        stamps = (await session.execute(select(ApiKey.last_used_at))).scalars().all()
    assert len(stamps) == 1 and stamps[0] is not None


async def test_in_the_full_app_mcp_answers_every_method_itself(fable: Fable, alice: Caller) -> None:
    """``fable serve`` also serves the web UI at ``/``: nothing aimed at /mcp may fall through to it."""
    key = await make_key(fable, alice)
    auth = {**ACCEPT, "authorization": f"Bearer {key}"}
    inspector = "http://localhost:6274"  # a browser client on another loopback port
    async with serve(create_web_app(fable)) as base, httpx.AsyncClient(base_url=base, timeout=scaled(30)) as http:
        for method in ("PUT", "PATCH"):
            refused = await http.request(method, "/mcp", headers=auth)
            assert (refused.status_code, refused.headers["allow"]) == (405, "GET, POST, DELETE"), method
        options = await http.options("/mcp")
        assert (options.status_code, options.headers["allow"]) == (204, "GET, POST, DELETE")

        preflight = await http.options("/mcp", headers={
            "origin": inspector, "access-control-request-method": "POST",
            "access-control-request-headers": "authorization, content-type, mcp-protocol-version"})
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == inspector
        assert "authorization" in preflight.headers["access-control-allow-headers"].lower()
        evil = await http.options("/mcp", headers={"origin": "http://evil.example",
                                                   "access-control-request-method": "POST"})
        assert evil.status_code == 400 and "access-control-allow-origin" not in evil.headers

        opened = await http.post("/mcp", json=INITIALIZE, headers={**auth, "origin": inspector})
        assert opened.status_code == 200 and opened.headers["access-control-allow-origin"] == inspector
        assert "mcp-session-id" in opened.headers["access-control-expose-headers"]
        assert (await http.post("/mcp", json=INITIALIZE, headers={**ACCEPT, "origin": inspector})).status_code == 401

        slash = await http.post("/mcp/", json=INITIALIZE, headers=auth)
        assert (slash.status_code, slash.headers["location"]) == (308, "/mcp")
        followed = await http.post("/mcp/", json=INITIALIZE, headers=auth, follow_redirects=True)
        assert followed.status_code == 200 and "serverInfo" in followed.text


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_a_revoked_keys_subscriptions_stop_with_it(mcp_base_url: str, fable: Fable, alice: Caller,
                                                         call, caplog: pytest.LogCaptureFixture) -> None:
    """Its next request is refused; the notifications its session subscribed to must stop too."""
    note = await call("create_note", title="Watched by a key about to go")
    key, key_id = await make_revocable_key(fable, alice)
    updates = ResourceUpdates()

    async with http_connect(f"{mcp_base_url}/mcp", key, mode="legacy", message_handler=updates) as client:
        await client.subscribe_resource(f"fable://notes/{note['id']}")
        await call("update_note", note_id=note["id"], body="while the key is good")
        with anyio.fail_after(scaled(10)):
            await updates.arrived.wait()
        await revoke_key(fable, alice, key_id)
        caplog.set_level("INFO", logger="fable_mcp.subscriptions")
        await call("update_note", note_id=note["id"], body="after revocation")
        await anyio.sleep(0.3)  # time for a notification already sent to arrive
        with pytest.raises(MCPError):
            await client.send_ping()
    assert updates.uris == [f"fable://notes/{note['id']}"]
    assert "dropping the subscriptions of a revoked MCP credential" in caplog.text


async def test_a_revoked_keys_listen_stream_ends(mcp_base_url: str, fable: Fable, alice: Caller, call) -> None:
    note = await call("create_note", title="Listened to by a key about to go")
    key, key_id = await make_revocable_key(fable, alice)
    async with (
        http_connect(f"{mcp_base_url}/mcp", key) as client,
        client.listen(resource_subscriptions=[f"fable://notes/{note['id']}"]) as stream,
    ):
        events = aiter(stream)
        await call("update_note", note_id=note["id"], body="while the key is good")
        with anyio.fail_after(scaled(10)):
            assert (await anext(events)).uri == f"fable://notes/{note['id']}"
        await revoke_key(fable, alice, key_id)
        await call("update_note", note_id=note["id"], body="after revocation")
        with anyio.fail_after(scaled(10)), pytest.raises(StopAsyncIteration):
            await anext(events)


async def test_each_key_holds_only_so_many_sessions_and_idle_ones_expire(fable: Fable, alice: Caller,
                                                                        bob: Caller) -> None:
    """One key opening sessions in a loop must not take every session the server has: past its
    share it gets 429 (others are unaffected); closing one, or leaving them idle, makes room."""
    settings = fable.settings.model_copy(update={"fable_mcp_sessions_per_key": 3,
                                                 "fable_mcp_session_idle_seconds": 1.0})
    alice_key, bob_key = await make_key(fable, alice), await make_key(fable, bob)
    async with serve(create_app(Fable(settings, fable.db))) as base:
        url = f"{base}/mcp"
        opened = [await _post(url, {"authorization": f"Bearer {alice_key}"}) for _ in range(3)]
        assert all(r.status_code == 200 for r in opened)
        refused = await _post(url, {"authorization": f"Bearer {alice_key}"})
        assert refused.status_code == 429 and "3 MCP sessions" in refused.json()["error"]["message"]
        assert (await _post(url, {"authorization": f"Bearer {bob_key}"})).status_code == 200
        modern = await _post(url, {"authorization": f"Bearer {alice_key}", "mcp-protocol-version": "2026-07-28"},
                             {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
                                 "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                                 "io.modelcontextprotocol/clientCapabilities": {}}}})
        assert modern.status_code != 429   # sessionless: not a session, not counted
        first = opened[0].headers["mcp-session-id"]
        async with httpx.AsyncClient(timeout=scaled(30)) as http:
            closed = await http.delete(url, headers={"authorization": f"Bearer {alice_key}", "mcp-session-id": first,
                                                     "mcp-protocol-version": "2025-11-25"})
        assert closed.status_code == 200
        assert (await _post(url, {"authorization": f"Bearer {alice_key}"})).status_code == 200
        await anyio.sleep(1.5)   # every session of alice's goes idle: the server closes them
        gone = await _post(url, {"authorization": f"Bearer {alice_key}", "mcp-session-id": opened[1].headers[
            "mcp-session-id"], "mcp-protocol-version": "2025-11-25"}, {"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert gone.status_code == 404
        assert (await _post(url, {"authorization": f"Bearer {alice_key}"})).status_code == 200
