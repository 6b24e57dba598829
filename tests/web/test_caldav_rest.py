"""The CalDAV routes the registry gives REST: bad input gets a clear error and changes nothing."""

from __future__ import annotations

import httpx
from support.web import error_of


async def test_bad_caldav_input_gets_a_clear_error_and_changes_nothing(
        as_alice: httpx.AsyncClient, row_counts) -> None:
    before = await row_counts()
    for method, path, body, status, kind in [
        ("PUT", "/api/caldav/account", {"url": "https://192.168.1.10/dav/", "username": "a", "password": "b"},
         422, "invalid_input"),
        ("PUT", "/api/caldav/account", {"url": "http://dav.example.com/", "username": "a", "password": "b"},
         422, "invalid_input"),
        ("PUT", "/api/caldav/account", {"url": "https://dav.example.com/", "username": "a"}, 422, "invalid_input"),
        ("PUT", "/api/caldav/account", {"url": "https://dav.example.com/", "username": "a", "password": ""},
         422, "invalid_input"),
        ("PUT", "/api/caldav/calendar", {"calendar": "/a/calendar/"}, 404, "not_found"),
        ("GET", "/api/caldav/calendars", None, 404, "not_found"),
        ("POST", "/api/caldav/sync", {}, 404, "not_found"),
        ("GET", "/api/caldav/versions?limit=0", None, 422, "invalid_input"),
    ]:
        response = await as_alice.request(method, path, json=body)
        assert response.status_code == status, (path, body, response.text)
        assert error_of(response)["type"] == kind
    assert await row_counts() == before
    assert (await as_alice.get("/api/caldav/status")).json() == {"connected": False}


async def test_the_caldav_routes_need_credentials(client: httpx.AsyncClient) -> None:
    for path in ("/api/caldav/status", "/api/caldav/calendars", "/api/caldav/versions"):
        assert (await client.get(path)).status_code == 401
    assert (await client.post("/api/caldav/sync")).status_code == 401
