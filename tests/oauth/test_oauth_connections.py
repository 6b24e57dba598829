"""Connections in Settings (list, choose toolsets, revoke) and client registrations for admins (list, disable):
each on the dispatcher and REST, refused to others, audited, and effective at once."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import select
from support.mcp_clients import make_key
from support.oauth import approve, authorization, browser, connect, pkce

from fable_core.db.models import AppLog
from fable_core.errors import Forbidden, InvalidInput, NotFound
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def _actions(fable: Fable) -> list[str]:
    async with fable.db.reading() as session:
        return list(await session.scalars(select(AppLog.action).where(AppLog.action.like("oauth.%"))
                                          .order_by(AppLog.id)))


async def _works(http: httpx.AsyncClient, token: str) -> bool:
    return (await http.get("/api/notes", headers={"authorization": f"Bearer {token}"})).status_code == 200


async def test_people_see_and_revoke_their_own_connections(
        http: httpx.AsyncClient, fable: Fable, alice: Caller, bob: Caller) -> None:
    client, issued = await connect(fable, http, alice.user_id)
    assert await _works(http, issued["access_token"])  # stamps the connection's last use
    mine = (await fable.call("list_connections", {}, alice))["items"]
    assert [(c["client"], c["client_id"], c["scope"], c["redirect_hosts"]) for c in mine] == [
        ("Test connector", client["client_id"], "write", ["127.0.0.1"])]
    assert "last_used_at" in mine[0]
    assert (await fable.call("list_connections", {}, bob))["items"] == []
    with pytest.raises(NotFound):
        await fable.call("revoke_connection", {"connection_id": mine[0]["id"]}, bob)

    key = await make_key(fable, alice)
    headers = {"authorization": f"Bearer {key}"}
    bad = await http.delete("/api/oauth/connections/abc", headers=headers)
    assert bad.status_code == 422
    assert (await http.delete("/api/oauth/connections/999", headers=headers)).status_code == 404
    gone = await http.delete(f"/api/oauth/connections/{mine[0]['id']}", headers=headers)
    assert gone.status_code == 200 and gone.json()["client"] == "Test connector"
    assert not await _works(http, issued["access_token"])
    refreshed = await http.post("/oauth/token", data={"grant_type": "refresh_token", "client_id": client["client_id"],
                                                      "refresh_token": issued["refresh_token"]})
    assert refreshed.json()["error"] == "invalid_grant"
    assert (await fable.call("list_connections", {}, alice))["items"] == []
    assert (await _actions(fable))[-1] == "oauth.connection.revoke"


async def test_admins_list_and_disable_client_registrations(
        http: httpx.AsyncClient, oauth_url: str, fable: Fable, alice: Caller, bob: Caller) -> None:
    assert alice.is_admin and not bob.is_admin
    client, issued = await connect(fable, http, bob.user_id)
    listed = (await fable.call("list_oauth_clients", {}, alice))["items"]
    assert [(c["name"], c["connections"]) for c in listed] == [("Test connector", 1)]
    with pytest.raises(Forbidden):
        await fable.call("disable_oauth_client", {"client_id": client["client_id"]}, bob)
    with pytest.raises(InvalidInput):
        await fable.call("list_oauth_clients", {"limit": 0}, alice)
    with pytest.raises(NotFound):
        await fable.call("disable_oauth_client", {"client_id": "fc_nobody"}, alice)

    disabled = await fable.call("disable_oauth_client", {"client_id": client["client_id"]}, alice)
    assert "disabled_at" in disabled
    assert not await _works(http, issued["access_token"])
    refreshed = await http.post("/oauth/token", data={"grant_type": "refresh_token", "client_id": client["client_id"],
                                                      "refresh_token": issued["refresh_token"]})
    assert refreshed.status_code == 401 and refreshed.json()["error"] == "invalid_client"
    _, challenge = pkce()
    async with browser(fable, oauth_url, bob.user_id) as b:
        r = await b.get("/api/oauth/authorization", params=authorization(client["client_id"], challenge))
        assert r.status_code == 422

    key = await make_key(fable, alice)  # an admin's key does not run the instance
    refused = await http.post("/api/oauth/clients/disabled", json={"client_id": client["client_id"], "disabled": False},
                              headers={"authorization": f"Bearer {key}"})
    assert refused.status_code == 403 and refused.json()["error"]["details"]["reason"] == "session_only"
    async with browser(fable, oauth_url, alice.user_id) as admin:  # the admin, signed in
        enabled = await admin.post("/api/oauth/clients/disabled", json={"client_id": client["client_id"],
                                                                         "disabled": False})
    assert enabled.status_code == 200 and "disabled_at" not in enabled.json()
    async with browser(fable, oauth_url, bob.user_id) as b:
        assert "code" in await approve(b, authorization(client["client_id"], challenge))
    actions = await _actions(fable)
    assert actions.count("oauth.client.disable") == 1 and actions.count("oauth.client.enable") == 1


async def test_people_choose_the_toolsets_of_their_own_connections(
        http: httpx.AsyncClient, oauth_url: str, fable: Fable, alice: Caller, bob: Caller) -> None:
    await connect(fable, http, alice.user_id)
    mine = (await fable.call("list_connections", {}, alice))["items"][0]
    assert "toolsets" not in mine  # the server's default
    path = f"/api/oauth/connections/{mine['id']}"
    async with browser(fable, oauth_url, alice.user_id) as b:
        r = await b.patch(path, json={"toolsets": ["default", "feeds"]})
        assert r.status_code == 200 and r.json()["toolsets"] == ["default", "feeds"], r.text
        for body in ({"toolsets": ["feeds", "nope"]}, {"toolsets": []}, {}):
            assert (await b.patch(path, json=body)).status_code == 422, body
        refused = await b.patch(path, json={"toolsets": ["feeds", "nope"]})
        assert refused.json()["error"]["message"].startswith("toolsets: unknown nope; use all, default, a toolset")
        assert [c["toolsets"] for c in (await b.get("/api/oauth/connections")).json()["items"]] == [
            ["default", "feeds"]]
    async with browser(fable, oauth_url, bob.user_id) as b:
        assert (await b.patch(path, json={"toolsets": ["all"]})).status_code == 404
    assert (await fable.call("list_connections", {}, alice))["items"][0]["toolsets"] == ["default", "feeds"]
    async with browser(fable, oauth_url, alice.user_id) as b:
        r = await b.patch(path, json={"toolsets": None})
        assert r.status_code == 200 and "toolsets" not in r.json(), r.text
    assert (await _actions(fable))[-1] == "oauth.connection.toolsets"
