"""Codes and tokens: what a client gets, and everything that must be refused (and audited)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
from sqlalchemy import select, update
from support.oauth import REDIRECT, approve, authorization, browser, connect, pkce, register, tokens

from fable_core.db.models import AppLog, OAuthCode
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def _audited(fable: Fable, action: str) -> list[AppLog]:
    async with fable.db.reading() as session:
        return list(await session.scalars(select(AppLog).where(AppLog.action == action)))


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


async def _mcp(http: httpx.AsyncClient, token: str) -> httpx.Response:
    return await http.post("/mcp", headers={"authorization": f"Bearer {token}",
                                            "accept": "application/json, text/event-stream"}, json=INITIALIZE)


async def _mcp_status(http: httpx.AsyncClient, token: str) -> int:
    return (await _mcp(http, token)).status_code


async def _code(http: httpx.AsyncClient, b: httpx.AsyncClient, client: dict | None = None) -> tuple[dict, str, str]:
    """A client (registered now unless given), a code alice's browser ``b`` approved, its verifier."""
    client = client or await register(http)
    verifier, challenge = pkce()
    back = await approve(b, authorization(client["client_id"], challenge))
    assert back["state"] == "xyz"
    return client, back["code"], verifier


async def test_a_code_gives_resource_bound_tokens_and_a_replay_revokes_them(
        http: httpx.AsyncClient, oauth_url: str, fable: Fable, alice: Caller) -> None:
    async with browser(fable, oauth_url, alice.user_id) as b:
        client, code, verifier = await _code(http, b)
    first = await tokens(http, client["client_id"], code, verifier)
    assert first.status_code == 200 and first.headers["cache-control"] == "no-store"
    body = first.json()
    assert body["token_type"] == "Bearer" and body["scope"] == "read write" and body["expires_in"] == 3600
    assert await _mcp_status(http, body["access_token"]) == 200

    again = await tokens(http, client["client_id"], code, verifier)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    fable.keys.forget()  # what another process sees within its two seconds
    assert await _mcp_status(http, body["access_token"]) == 401
    assert len(await _audited(fable, "oauth.code.replay")) == 1


async def test_wrong_verifier_redirect_or_resource_and_expired_codes_are_refused(
        http: httpx.AsyncClient, oauth_url: str, fable: Fable, alice: Caller) -> None:
    async with browser(fable, oauth_url, alice.user_id) as b:
        client, code, verifier = await _code(http, b)
        wrong = await tokens(http, client["client_id"], code, pkce()[0])
        assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
        assert (await tokens(http, client["client_id"], code, verifier)).status_code == 400  # the code is spent

        _, code, verifier = await _code(http, b, client)
        other = await tokens(http, client["client_id"], code, verifier, redirect_uri="http://127.0.0.1:1/else")
        assert other.json()["error"] == "invalid_grant"

        _, code, verifier = await _code(http, b, client)
        elsewhere = await tokens(http, client["client_id"], code, verifier, resource="https://other.example/mcp")
        assert elsewhere.status_code == 400 and elsewhere.json()["error"] == "invalid_target"

        _, code, verifier = await _code(http, b, client)
        async with fable.db.transaction() as session:
            await session.execute(update(OAuthCode).values(expires_at=datetime.now(UTC) - timedelta(seconds=1)))
        expired = await tokens(http, client["client_id"], code, verifier)
        assert expired.json() == {"error": "invalid_grant",
                                  "error_description": "this authorization code has expired"}

        another = await register(http, "Another")
        _, code, verifier = await _code(http, b, client)
    stolen = await tokens(http, another["client_id"], code, verifier)
    assert stolen.json()["error"] == "invalid_grant"
    reasons = sorted(e.details["reason"] for e in await _audited(fable, "oauth.token.refused"))
    assert reasons == ["expired", "pkce", "redirect_uri", "resource"]


async def test_refresh_rotates_and_reuse_revokes_the_family(
        http: httpx.AsyncClient, fable: Fable, alice: Caller) -> None:
    client, first = await connect(fable, http, alice.user_id)

    async def refresh(token: str, **extra: str) -> httpx.Response:
        return await http.post("/oauth/token", data={"grant_type": "refresh_token", "refresh_token": token,
                                                     "client_id": client["client_id"]} | extra)

    second = (await refresh(first["refresh_token"])).json()
    assert second["refresh_token"] != first["refresh_token"] and await _mcp_status(http, second["access_token"]) == 200
    narrowed = await refresh(second["refresh_token"], scope="read")
    assert narrowed.json()["scope"] == "read"
    third = narrowed.json()
    assert (await refresh(third["refresh_token"], scope="read write")).json()["error"] == "invalid_scope"
    assert (await refresh(third["refresh_token"], resource="https://other.example/mcp")).json()["error"] \
        == "invalid_target"

    reused = await refresh(first["refresh_token"])  # a leaked, already used one
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    fable.keys.forget()
    assert await _mcp_status(http, third["access_token"]) == 401
    assert (await refresh(third["refresh_token"])).json()["error"] == "invalid_grant"
    assert len(await _audited(fable, "oauth.refresh.reuse")) == 1


async def test_revocation_ends_a_token_and_a_refresh_token_its_family(
        http: httpx.AsyncClient, fable: Fable, alice: Caller) -> None:
    client, issued = await connect(fable, http, alice.user_id)
    form = {"token": issued["refresh_token"], "client_id": client["client_id"]}
    assert (await http.post("/oauth/revoke", data=form)).status_code == 200
    assert await _mcp_status(http, issued["access_token"]) == 401
    unknown = await http.post("/oauth/revoke", data=form | {"token": "fat_nothing"})
    assert unknown.status_code == 200  # RFC 7009 §2.2: not an error
    nobody = await http.post("/oauth/revoke", data=form | {"client_id": "fc_nobody"})
    assert nobody.status_code == 401 and nobody.json()["error"] == "invalid_client"


async def test_read_scope_tokens_run_read_tools_only(http: httpx.AsyncClient, fable: Fable, alice: Caller) -> None:
    _, issued = await connect(fable, http, alice.user_id, scope="read")
    headers = {"authorization": f"Bearer {issued['access_token']}"}
    assert (await http.get("/api/notes", headers=headers)).status_code == 200
    refused = await http.post("/api/notes", headers=headers, json={"title": "no"})
    assert refused.status_code == 403


async def test_a_token_for_a_resource_this_fable_no_longer_is_refused(
        http: httpx.AsyncClient, fable: Fable, alice: Caller) -> None:
    _, issued = await connect(fable, http, alice.user_id)
    from fable_core.admin import instance

    async with fable.db.transaction() as session:
        await instance.set_public_url(session, "https://moved.example")
    fable.keys.forget()
    r = await _mcp(http, issued["access_token"])
    assert r.status_code == 401 and "another resource" in r.json()["error_description"]


async def test_token_endpoint_bad_input(http: httpx.AsyncClient, oauth_url: str) -> None:
    client = await register(http)
    cases = [
        ({"grant_type": "password", "client_id": client["client_id"]}, 400, "unsupported_grant_type"),
        ({"grant_type": "authorization_code", "client_id": "fc_nobody"}, 401, "invalid_client"),
        ({"grant_type": "authorization_code", "client_id": client["client_id"], "code": "x"}, 400, "invalid_grant"),
    ]
    for form, status, error in cases:
        r = await http.post("/oauth/token", data=form)
        assert (r.status_code, r.json()["error"]) == (status, error), form
    as_json = await http.post("/oauth/token", json={"grant_type": "authorization_code"})
    assert as_json.status_code == 400 and as_json.json()["error"] == "invalid_request"
    repeated = await http.post("/oauth/token", content=b"grant_type=a&grant_type=b",
                               headers={"content-type": "application/x-www-form-urlencoded"})
    assert repeated.json()["error"] == "invalid_request"
    assert (await http.get("/oauth/token")).status_code == 405
    assert REDIRECT  # the helpers' redirect URI is the loopback one every test registers


async def test_the_hourly_job_prunes_codes_and_tokens_long_expired(
        http: httpx.AsyncClient, fable: Fable, alice: Caller) -> None:
    from fable_core.db.models import OAuthToken
    from fable_core.identity.oauth.cleanup import prune
    from fable_core.tools.jobs import JOBS, run_job

    _, issued = await connect(fable, http, alice.user_id)
    assert "prune_oauth" in JOBS and await run_job(fable, "prune_oauth")
    assert await _mcp_status(http, issued["access_token"]) == 200  # nothing young was touched
    async with fable.db.transaction() as session:
        await session.execute(update(OAuthToken).where(OAuthToken.kind == "access")
                              .values(expires_at=datetime.now(UTC) - timedelta(days=2)))
    assert await prune(fable.db, batch=1) == {"codes": 0, "tokens": 1}
    assert await prune(fable.db, now=datetime.now(UTC) + timedelta(hours=2)) == {"codes": 1, "tokens": 0}
