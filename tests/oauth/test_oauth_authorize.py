"""Discovery, registration and the authorization request: what a client finds, what it may
register, and which requests are refused without ever sending the person anywhere."""

from __future__ import annotations

import httpx
from sqlalchemy import func, select
from support.oauth import REDIRECT, approve, authorization, browser, pkce, query_of, register

from fable_core.db.models import AppLog, OAuthClient, OAuthCode, OAuthGrant
from fable_core.runtime import Fable
from fable_core.tools import REGISTRY
from fable_core.tools.caller import Caller


async def _count(fable: Fable, model: type) -> int:
    async with fable.db.reading() as session:
        return int(await session.scalar(select(func.count()).select_from(model)) or 0)


async def test_discovery_from_a_401_to_the_authorization_server(http: httpx.AsyncClient, oauth_url: str) -> None:
    refused = await http.post("/mcp", json={})
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    assert f'resource_metadata="{oauth_url}/.well-known/oauth-protected-resource/mcp"' in challenge
    assert 'scope="read write"' in challenge
    api = await http.get("/api/notes")
    assert api.status_code == 401 and 'resource_metadata="' in api.headers["www-authenticate"]

    resource = (await http.get("/.well-known/oauth-protected-resource/mcp")).json()
    assert resource["resource"] == f"{oauth_url}/mcp" and resource["authorization_servers"] == [oauth_url]
    meta = (await http.get("/.well-known/oauth-authorization-server", headers={"origin": "https://x.example"}))
    assert meta.headers["access-control-allow-origin"] == "*"
    body = meta.json()
    assert body["issuer"] == oauth_url and body["code_challenge_methods_supported"] == ["S256"]
    assert body["token_endpoint"] == f"{oauth_url}/oauth/token"
    assert body["registration_endpoint"] == f"{oauth_url}/oauth/register"
    assert body["token_endpoint_auth_methods_supported"] == ["none"]


async def test_without_a_public_url_there_is_no_authorization_server(
        fable: Fable, server_url: str) -> None:
    async with httpx.AsyncClient(base_url=server_url) as plain:  # no oauth_url: nothing pinned
        meta = await plain.get("/.well-known/oauth-authorization-server")
        assert meta.status_code == 503 and "FABLE_BASE_URL" in meta.json()["error"]["message"]
        resource = (await plain.get("/.well-known/oauth-protected-resource")).json()
        assert "authorization_servers" not in resource


async def test_registration_keeps_only_what_fable_accepts(http: httpx.AsyncClient, fable: Fable) -> None:
    client = await register(http, token_endpoint_auth_method="client_secret_post",
                            redirect_uris=[REDIRECT, "https://claude.ai/api/mcp/auth_callback",
                                           "cursor://anysphere.cursor-retrieval/oauth/callback"])
    assert client["token_endpoint_auth_method"] == "none" and "client_secret" not in client
    assert client["client_id"].startswith("fc_")
    bad = [
        ({"redirect_uris": ["http://evil.example/cb"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["javascript:alert(1)"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["https://x.example/cb#frag"]}, "invalid_redirect_uri"),
        ({"redirect_uris": []}, "invalid_redirect_uri"),
        ({"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"]}, "invalid_client_metadata"),
        ({"redirect_uris": [REDIRECT], "client_uri": "not a url"}, "invalid_client_metadata"),
        ({"redirect_uris": [REDIRECT], "client_name": 7}, "invalid_client_metadata"),
    ]
    for metadata, error in bad:
        r = await http.post("/oauth/register", json=metadata)
        assert (r.status_code, r.json()["error"]) == (400, error), metadata
    assert (await http.post("/oauth/register", content=b"[1]", headers={"content-type": "application/json"})
            ).status_code == 400
    assert await _count(fable, OAuthClient) == 1


async def test_a_registration_flood_is_refused_and_audited(http: httpx.AsyncClient, fable: Fable) -> None:
    for _ in range(10):
        await register(http)
    r = await http.post("/oauth/register", json={"redirect_uris": [REDIRECT]})
    assert r.status_code == 429 and "retry-after" in r.headers
    assert await _count(fable, OAuthClient) == 10
    async with fable.db.reading() as session:
        actions = list(await session.scalars(select(AppLog.action).where(AppLog.action.like("oauth.client.%"))))
    assert actions.count("oauth.client.register") == 10 and actions.count("oauth.client.register_refused") == 1


async def test_unknown_clients_and_unregistered_redirects_are_never_redirected_to(
        http: httpx.AsyncClient, oauth_url: str, fable: Fable, alice: Caller) -> None:
    client = await register(http)
    _, challenge = pkce()
    async with browser(fable, oauth_url, alice.user_id) as b:
        for params in (authorization("fc_unknown", challenge),
                       authorization(client["client_id"], challenge, redirect_uri="https://evil.example/cb"),
                       authorization(client["client_id"], challenge, redirect_uri="http://127.0.0.1:8765/other")):
            r = await b.get("/oauth/authorize", params=params)
            assert r.status_code == 302 and r.headers["location"].startswith("/oauth/consent?")  # our own page
            shown = await b.get("/api/oauth/authorization", params=query_of(r.headers["location"]))
            assert shown.status_code == 422
            posted = await b.post("/api/oauth/authorization", json=params | {"approve": True})
            assert posted.status_code == 422 and "redirect" not in posted.json()
    assert await _count(fable, OAuthCode) == 0 and await _count(fable, OAuthGrant) == 0


async def test_other_faults_go_back_to_the_client_with_an_error(
        http: httpx.AsyncClient, oauth_url: str, fable: Fable, alice: Caller) -> None:
    client = await register(http)
    _, challenge = pkce()
    cases = [({"response_type": "token"}, "unsupported_response_type"),
             ({"code_challenge_method": "plain"}, "invalid_request"),
             ({"code_challenge": ""}, "invalid_request"),
             ({"scope": "admin"}, "invalid_scope"),
             ({"resource": "https://other.example/mcp"}, "invalid_target")]
    for extra, error in cases:
        r = await http.get("/oauth/authorize", params=authorization(client["client_id"], challenge) | extra)
        assert r.status_code == 302, extra
        back = r.headers["location"]
        assert back.startswith(REDIRECT) and query_of(back)["error"] == error and query_of(back)["state"] == "xyz"
    assert await _count(fable, OAuthCode) == 0


async def test_a_loopback_redirect_may_use_any_port_but_is_always_asked_again(
        http: httpx.AsyncClient, oauth_url: str, fable: Fable, alice: Caller) -> None:
    client = await register(http)
    _, challenge = pkce()
    params = authorization(client["client_id"], challenge, redirect_uri="http://127.0.0.1:50123/callback")
    async with browser(fable, oauth_url, alice.user_id) as b:
        assert "code" in await approve(b, params)
        again = await b.get("/oauth/authorize", params=params | {"scope": "read"})
        assert again.headers["location"].startswith("/oauth/consent?")  # any local app could use this id
        shown = await b.get("/api/oauth/authorization", params=query_of(again.headers["location"]))
        assert shown.json()["remembered"] is True


async def test_an_approval_is_remembered_for_an_https_redirect(
        http: httpx.AsyncClient, oauth_url: str, fable: Fable, alice: Caller) -> None:
    hosted = "https://claude.ai/api/mcp/auth_callback"
    client = await register(http, redirect_uris=[hosted])
    _, challenge = pkce()
    params = authorization(client["client_id"], challenge, redirect_uri=hosted, scope="read")
    async with browser(fable, oauth_url, alice.user_id) as b:
        assert (await b.get("/oauth/authorize", params=params)).headers["location"].startswith("/oauth/consent?")
        assert "code" in await approve(b, params)
        again = await b.get("/oauth/authorize", params=params)
        assert again.status_code == 302 and again.headers["location"].startswith(f"{hosted}?code=")
        wider = await b.get("/oauth/authorize", params=params | {"scope": "read write"})
        assert wider.headers["location"].startswith("/oauth/consent?")  # more than was approved: asked
        other = (await register(http, redirect_uris=[hosted]))["client_id"]
        asked = await b.get("/oauth/authorize", params=params | {"client_id": other})
        assert asked.headers["location"].startswith("/oauth/consent?")  # another client: asked


async def test_deny_sends_access_denied(http: httpx.AsyncClient, oauth_url: str, fable: Fable, alice: Caller) -> None:
    client = await register(http)
    _, challenge = pkce()
    async with browser(fable, oauth_url, alice.user_id) as b:
        r = await b.post("/api/oauth/authorization", json=authorization(client["client_id"], challenge)
                         | {"approve": False})
    assert query_of(r.json()["redirect"]) == {"error": "access_denied", "state": "xyz",
                                              "error_description": "the person denied the request"}
    assert await _count(fable, OAuthGrant) == 0


async def test_consent_refuses_other_sites_keys_and_anonymous_people(
        http: httpx.AsyncClient, oauth_url: str, fable: Fable, alice: Caller) -> None:
    client = await register(http)
    _, challenge = pkce()
    decision = authorization(client["client_id"], challenge) | {"approve": True}
    async with browser(fable, oauth_url, alice.user_id) as b:
        forged = await b.post("/api/oauth/authorization", json=decision, headers={"origin": "https://evil.example"})
        assert forged.status_code == 403 and forged.json()["error"]["details"]["reason"] == "csrf"
        del b.headers["origin"]
        assert (await b.post("/api/oauth/authorization", json=decision)).status_code == 403  # no Origin, no token
    anonymous = await http.post("/api/oauth/authorization", json=decision)
    assert anonymous.status_code == 401
    from support.mcp_clients import make_key

    key = await make_key(fable, alice)
    with_key = await http.post("/api/oauth/authorization", json=decision, headers={"authorization": f"Bearer {key}"})
    assert with_key.status_code == 403
    assert await _count(fable, OAuthGrant) == 0 and await _count(fable, OAuthCode) == 0


def test_the_connection_tools_are_not_offered_to_agents() -> None:
    for name in ("list_connections", "revoke_connection", "list_oauth_clients", "disable_oauth_client"):
        assert REGISTRY.get(name) is not None and not REGISTRY.get(name).agents  # type: ignore[union-attr]


async def test_operators_can_close_registration_or_turn_oauth_off(fable: Fable, server_url: str) -> None:
    from fable_web.app import create_app

    async def answers(**settings: bool) -> tuple[int, int, bool]:
        configured = Fable(fable.settings.model_copy(update={"fable_base_url": "http://localhost", **settings}),
                           fable.db)
        transport = httpx.ASGITransport(app=create_app(configured))
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
            registered = await c.post("/oauth/register", json={"redirect_uris": [REDIRECT]})
            meta = await c.get("/.well-known/oauth-authorization-server")
            resource = (await c.get("/.well-known/oauth-protected-resource/mcp")).json()
        return registered.status_code, meta.status_code, "authorization_servers" in resource

    assert await answers(fable_oauth_registration=False) == (403, 200, True)
    assert await answers(fable_oauth_enabled=False) == (503, 503, False)
    assert await _count(fable, OAuthClient) == 0


async def test_a_redirect_a_browser_reads_as_another_host_is_refused(
        http: httpx.AsyncClient, oauth_url: str, fable: Fable, alice: Caller) -> None:
    """Python's urlsplit sees host 127.0.0.1 in ``http://evil.example\\@127.0.0.1:9/cb``; a browser
    (WHATWG parsing: the backslash is a slash) goes to evil.example. Such a URI is never
    registered, and never matches a registered loopback redirect on another port."""
    client = await register(http, redirect_uris=["http://127.0.0.1:1/cb"])
    for uri in ("http://evil.example\\@127.0.0.1:9/cb", "http://user@127.0.0.1:9/cb", "http://127.0.0.1:9/c b",
                "http://127.0.0.1:9/cb\x00", "http://%65vil.example@127.0.0.1:9/cb"):
        refused = await http.post("/oauth/register", json={"redirect_uris": [uri]})
        assert (refused.status_code, refused.json()["error"]) == (400, "invalid_redirect_uri"), uri
    _, challenge = pkce()
    async with browser(fable, oauth_url, alice.user_id) as b:
        params = authorization(client["client_id"], challenge, redirect_uri="http://evil.example\\@127.0.0.1:9/cb")
        r = await b.get("/oauth/authorize", params=params)
        assert r.status_code == 302 and r.headers["location"].startswith("/oauth/consent?")  # never to the URI
        assert (await b.get("/api/oauth/authorization", params=query_of(r.headers["location"]))).status_code == 422
        posted = await b.post("/api/oauth/authorization", json=params | {"approve": True})
        assert posted.status_code == 422 and "redirect" not in posted.json()
        ok = await approve(b, authorization(client["client_id"], challenge, redirect_uri="http://127.0.0.1:9/cb"))
        assert "code" in ok  # the plain loopback redirect on another port still works
    assert await _count(fable, OAuthCode) == 1
