"""Client ID Metadata Documents: a client named by the URL of its metadata, fetched through the
SSRF guard at each authorization request; refused (shown, never redirected to) when the document
is on a private address, does not name itself, or cannot be fetched."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from support.oauth import REDIRECT, authorization, browser, pkce, query_of, tokens
from support.servers import serve, serve_in_thread
from support.web_site import FakeSite, web_site_app

from fable_core.admin import instance
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app


@pytest.fixture(scope="module")
def site_and_url() -> Iterator[tuple[FakeSite, str]]:
    site = FakeSite()
    with serve_in_thread(web_site_app(site)) as url:
        yield site, url


@pytest.fixture(scope="module")
async def documents_url(fable: Fable, site_and_url: tuple[FakeSite, str]) -> AsyncIterator[str]:
    """A Fable that may fetch from the fake site (the operator's exemption), and its URL."""
    allowed = fable.settings.model_copy(update={"fable_fetch_allow_hosts": [site_and_url[1].removeprefix("http://")]})
    async with serve(create_app(Fable(allowed, fable.db))) as url:
        yield url


@pytest.fixture
async def public(fable: Fable, documents_url: str) -> str:
    async with fable.db.transaction() as session:
        await instance.set_public_url(session, documents_url)
    return documents_url


async def test_a_client_named_by_its_metadata_document_connects(
        public: str, site_and_url: tuple[FakeSite, str], fable: Fable, alice: Caller) -> None:
    site, site_url = site_and_url
    client_id = f"{site_url}/oauth/client.json"
    site.put("/oauth/client.json", json.dumps({"client_id": client_id, "client_name": "Documented client",
                                               "redirect_uris": [REDIRECT]}), "application/json")
    verifier, challenge = pkce()
    params = authorization(client_id, challenge)
    async with browser(fable, public, alice.user_id) as b, httpx.AsyncClient(base_url=public) as http:
        meta = (await http.get("/.well-known/oauth-authorization-server")).json()
        assert meta["client_id_metadata_document_supported"] is True
        shown = await b.get("/api/oauth/authorization", params=params)
        assert shown.status_code == 200 and shown.json()["client"]["name"] == "Documented client"
        decided = await b.post("/api/oauth/authorization", json=params | {"approve": True})
        issued = await tokens(http, client_id, query_of(decided.json()["redirect"])["code"], verifier)
        assert issued.status_code == 200, issued.text
        bearer = {"authorization": f"Bearer {issued.json()['access_token']}"}
        assert (await http.get("/api/notes", headers=bearer)).status_code == 200
    assert (await fable.call("list_connections", {}, alice))["items"][0]["client_id"] == client_id


async def test_documents_that_cannot_be_trusted_are_refused(
        public: str, site_and_url: tuple[FakeSite, str], fable: Fable, alice: Caller) -> None:
    site, site_url = site_and_url
    site.put("/other.json", json.dumps({"client_id": "https://someone.else/client.json",
                                        "redirect_uris": [REDIRECT]}), "application/json")
    site.put("/bad.json", json.dumps({"client_id": f"{site_url}/bad.json", "redirect_uris": ["http://evil.example/"]}),
             "application/json")
    _, challenge = pkce()
    cases = {
        "https://127.0.0.1:9/client.json": "not public",  # a private address: the SSRF guard
        "http://fable-client.example/client.json": "must be https",
        f"{site_url}/other.json": "does not name it",
        f"{site_url}/bad.json": "plain http is allowed only on a loopback address",
        f"{site_url}/missing.json": "answered 404",
    }
    async with browser(fable, public, alice.user_id) as b:
        for client_id, why in cases.items():
            params = authorization(client_id, challenge)
            r = await b.get("/oauth/authorize", params=params)
            assert r.headers["location"].startswith("/oauth/consent?"), client_id  # never to the client
            shown = await b.get("/api/oauth/authorization", params=params)
            assert shown.status_code == 422 and why in shown.json()["error"]["message"], (client_id, shown.text)
    assert (await fable.call("list_oauth_clients", {}, alice))["items"] == []
