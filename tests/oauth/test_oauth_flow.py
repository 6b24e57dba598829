"""The whole flow as a real MCP client does it: the SDK's OAuth client discovers Fable's
authorization server from a 401, registers, sends the person through the consent page, gets
tokens and calls tools; then refresh, and what a connection looks like in Settings."""

from __future__ import annotations

from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from support.oauth import REDIRECT, query_of
from support.pace import scaled
from support.users import PASSWORD

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


class _Memory:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def test_the_sdk_oauth_client_connects_through_the_consent_page(
        oauth_url: str, fable: Fable, alice: Caller) -> None:
    landed: dict[str, Any] = {}
    seen: dict[str, Any] = {}

    async with httpx.AsyncClient(base_url=oauth_url, headers={"origin": oauth_url}, timeout=scaled(30)) as b:
        signed_in = await b.post("/api/auth/login", json={"username": "alice", "password": PASSWORD})
        assert signed_in.status_code == 200

        async def redirect_handler(url: str) -> None:  # the person's browser
            r = await b.get(url)
            assert r.status_code == 302 and r.headers["location"].startswith("/oauth/consent?")
            asked = query_of(r.headers["location"])
            seen.update((await b.get("/api/oauth/authorization", params=asked)).json())
            decided = await b.post("/api/oauth/authorization", json=asked | {"approve": True})
            landed.update(query_of(decided.json()["redirect"]))

        async def callback_handler() -> AuthorizationCodeResult:
            return AuthorizationCodeResult(code=landed["code"], state=landed.get("state"))

        storage = _Memory()
        provider = OAuthClientProvider(
            server_url=f"{oauth_url}/mcp",
            client_metadata=OAuthClientMetadata(client_name="SDK connector", redirect_uris=[REDIRECT],
                                                grant_types=["authorization_code", "refresh_token"],
                                                response_types=["code"], token_endpoint_auth_method="none"),
            storage=storage, redirect_handler=redirect_handler, callback_handler=callback_handler)
        async with (httpx2.AsyncClient(auth=provider, timeout=scaled(30)) as http,
                    Client(streamable_http_client(f"{oauth_url}/mcp", http_client=http)) as client):
            names = {t.name for t in (await client.list_tools()).tools}
            assert "create_note" in names and "list_connections" not in names  # agents=False
            created = await client.call_tool("create_note", {"title": "Written over OAuth"})
            assert not created.is_error, created

    assert seen["client"]["name"] == "SDK connector" and seen["redirect_host"] == "127.0.0.1:8765"
    assert seen["scopes"] == ["read", "write"] and seen["user"] == "alice"
    assert storage.tokens is not None and storage.tokens.access_token.startswith("fat_")
    notes = await fable.call("list_notes", {}, alice)
    assert [n["title"] for n in notes["items"]] == ["Written over OAuth"]
    connections = await fable.call("list_connections", {}, alice)
    assert [(c["client"], c["scope"]) for c in connections["items"]] == [("SDK connector", "write")]

    async with httpx.AsyncClient(base_url=oauth_url) as plain:  # the same token on /api
        r = await plain.get("/api/notes", headers={"authorization": f"Bearer {storage.tokens.access_token}"})
        assert r.status_code == 200 and r.json()["items"][0]["title"] == "Written over OAuth"
