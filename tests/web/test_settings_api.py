"""/api/settings: the settings tools' own routes, generated from the registry."""

from __future__ import annotations

import httpx
from starlette.applications import Starlette
from support.mcp_clients import make_key
from support.web import error_of, make_client

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.preferences import KEYS


async def test_list_get_put_delete(as_alice: httpx.AsyncClient) -> None:
    listed = (await as_alice.get("/api/settings")).json()["items"]
    assert [s["key"] for s in listed] == list(KEYS)
    assert all(None not in s.values() for s in listed)  # no nulls on REST either
    r = await as_alice.put("/api/settings/timezone", json={"value": "America/New_York"})
    assert r.status_code == 200 and r.json()["value"] == "America/New_York", r.text
    got = (await as_alice.get("/api/settings/timezone")).json()
    assert got["value"] == "America/New_York" and got["default"] == "UTC" and "accepts" in got
    r = await as_alice.delete("/api/settings/timezone")
    assert r.status_code == 200 and r.json()["value"] == "UTC"
    assert (await as_alice.get("/api/settings/timezone")).json()["value"] == "UTC"


async def test_bad_requests_are_clear_and_change_nothing(as_alice: httpx.AsyncClient, row_counts) -> None:
    await as_alice.put("/api/settings/assistant_name", json={"value": "Ada"})
    before = await row_counts()
    r = await as_alice.put("/api/settings/assistent_name", json={"value": "Bea"})
    assert r.status_code == 404 and error_of(r)["details"]["did_you_mean"] == ["assistant_name"]
    r = await as_alice.put("/api/settings/timezone", json={"value": "Moon/Base"})
    assert r.status_code == 422 and "not a known time zone" in error_of(r)["message"]
    r = await as_alice.put("/api/settings/timezone", json={"timezone": "Europe/Paris"})
    assert r.status_code == 422 and "value: Field required" in error_of(r)["message"]
    r = await as_alice.put("/api/settings/journal", json={"value": {"locations": [{"name": "x"}]}})
    assert r.status_code == 422 and error_of(r)["details"]["errors"][0]["field"] == "value.locations.0.lat"
    assert (await as_alice.get("/api/settings/nope")).status_code == 404
    assert (await as_alice.delete("/api/settings/nope")).status_code == 404
    assert await row_counts() == before
    assert (await as_alice.get("/api/settings/assistant_name")).json()["value"] == "Ada"


async def test_a_read_key_reads_settings_and_a_write_key_changes_them(app: Starlette, fable: Fable,
                                                                      alice: Caller) -> None:
    read, write = await make_key(fable, alice, "read"), await make_key(fable, alice, "write")
    async with make_client(app, authorization=f"Bearer {read}") as reader, \
            make_client(app, authorization=f"Bearer {write}") as writer:
        assert (await reader.get("/api/settings/timezone")).status_code == 200
        r = await reader.put("/api/settings/timezone", json={"value": "Europe/Paris"})
        assert r.status_code == 403
        r = await writer.put("/api/settings/timezone", json={"value": "Europe/Paris"})
        assert r.status_code == 200
        assert (await reader.get("/api/settings/timezone")).json()["value"] == "Europe/Paris"
