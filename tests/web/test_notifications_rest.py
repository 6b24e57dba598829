"""The notification and push routes the registry gives REST, and the service worker's file."""

from __future__ import annotations

import httpx
from support.web import error_of

from fable_core.people.notifications.notify import add_notifications
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

KEY = "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM"
AUTH = "tBHItJI5svbpez7KI4CCXg"


async def _tell(fable: Fable, caller: Caller, title: str) -> None:
    async with fable.db.transaction() as session:
        await add_notifications(session, [caller.user_id], "share", title, data={"project_id": 1})


async def test_the_bell_needs_one_call_and_marking_answers_the_new_count(
        fable: Fable, alice: Caller, as_alice: httpx.AsyncClient, as_bob: httpx.AsyncClient) -> None:
    await _tell(fable, alice, "bob shared the project A with you")
    await _tell(fable, alice, "bob shared the project B with you")
    page = (await as_alice.get("/api/notifications", params={"limit": 1})).json()
    assert page["unread"] == 2 and page["items"][0]["title"].endswith("B with you") and page["next_cursor"]
    assert (await as_bob.get("/api/notifications")).json() == {"items": [], "unread": 0, "next_cursor": None}
    first = page["items"][0]["id"]
    assert (await as_bob.post("/api/notifications/read", json={"ids": [first]})).json() == {"marked": 0, "unread": 0}
    marked = await as_alice.post("/api/notifications/read", json={"ids": [first]})
    assert marked.status_code == 200 and marked.json() == {"marked": 1, "unread": 1}
    assert (await as_alice.get("/api/notifications/unread")).json() == {"unread": 1}
    assert (await as_alice.post("/api/notifications/read-all")).json() == {"marked": 1, "unread": 0}


async def test_bad_input_gets_422_and_changes_nothing(
        fable: Fable, alice: Caller, as_alice: httpx.AsyncClient, row_counts) -> None:
    await _tell(fable, alice, "bob shared the project A with you")
    before = await row_counts()
    for method, path, body in [
        ("POST", "/api/notifications/read", {"ids": "all"}),
        ("POST", "/api/notifications/read", {"ids": [1], "extra": 1}),
        ("GET", "/api/notifications?limit=500", None),
        ("POST", "/api/push/subscriptions", {"endpoint": "http://10.0.0.1/x", "p256dh": KEY, "auth": AUTH}),
        ("POST", "/api/push/subscriptions", {"endpoint": "https://push.example.com/x", "p256dh": KEY[:40],
                                             "auth": AUTH}),
        ("POST", "/api/push/subscriptions", {"endpoint": "https://push.example.com/x", "p256dh": KEY}),
    ]:
        response = await as_alice.request(method, path, json=body)
        assert response.status_code == 422, (path, body, response.text)
        assert error_of(response)["type"] == "invalid_input"
    assert await row_counts() == before
    assert (await as_alice.get("/api/notifications/unread")).json() == {"unread": 1}


async def test_a_device_subscribes_once_per_endpoint_and_unsubscribes(as_alice: httpx.AsyncClient) -> None:
    key = (await as_alice.get("/api/push/public-key")).json()["public_key"]
    assert len(key) == 87  # 65 bytes, base64url without padding
    body = {"endpoint": "https://push.example.com/send/abc", "p256dh": KEY, "auth": AUTH, "device": "Firefox"}
    assert (await as_alice.post("/api/push/subscriptions", json=body)).json() == {"devices": 1}
    assert (await as_alice.post("/api/push/subscriptions", json=body)).json() == {"devices": 1}
    gone = await as_alice.delete("/api/push/subscriptions", params={"endpoint": body["endpoint"]})
    assert gone.json() == {"unsubscribed": True}


async def test_the_routes_need_credentials(client: httpx.AsyncClient) -> None:
    for path in ("/api/notifications", "/api/notifications/unread", "/api/push/public-key"):
        assert (await client.get(path)).status_code == 401


async def test_the_service_worker_is_served_from_the_root_uncached(client: httpx.AsyncClient) -> None:
    response = await client.get("/sw.js")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/javascript")
    assert response.headers["cache-control"] == "no-cache"
    assert "showNotification" in response.text and "notificationclick" in response.text
