"""The journal over REST, as the registry generates it: a day, a range, "prepare now", and the
bad schedule the journal setting refuses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest
from support.clock import today
from support.web import error_of

TODAY = datetime.now(UTC).date()


async def test_today_opens_prepares_and_lists_over_rest(as_alice: httpx.AsyncClient, as_bob: httpx.AsyncClient) -> None:
    this_day = today()  # when the test runs, not when its module was imported
    opened = await as_alice.post("/api/journal/days", json={})
    assert opened.status_code == 200 and opened.json()["day"] == this_day.isoformat()
    prepared = (await as_alice.post("/api/journal/prepare", json={})).json()
    assert prepared["prep"] == "done" and prepared["opener"].endswith("a blank page.")
    start = (this_day - timedelta(days=3)).isoformat()
    listed = (await as_alice.get("/api/journal/days", params={"start": start})).json()
    assert listed == {"items": [{"day": this_day.isoformat(), "conversation_id": prepared["conversation_id"],
                                 "prep": "done"}]}
    assert (await as_bob.get("/api/journal/days")).json() == {"items": []}
    conversation = (await as_alice.get(f"/api/chat/conversations/{prepared['conversation_id']}")).json()
    assert conversation["messages"][0]["content"] == prepared["opener"]
    assert (await as_bob.get(f"/api/chat/conversations/{prepared['conversation_id']}")).status_code == 404


@pytest.mark.parametrize(("method", "path", "body", "said"), [
    ("PUT", "/api/settings/journal", {"value": {"prep_time": "25:00"}}, "hour value is outside expected range"),
    ("PUT", "/api/settings/journal", {"value": {"timezone": "Mars/Olympus"}}, "'Mars/Olympus' is not a known"),
    ("PUT", "/api/settings/timezone", {"value": "Europe/Parsi"}, "not a known time zone"),
    ("POST", "/api/journal/days", {"day": (TODAY + timedelta(days=3)).isoformat()}, "is after today"),
    ("POST", "/api/journal/prepare", {"day": "2026-02-30"}, "day"),
    ("GET", "/api/journal/days?start=2026-03-10&end=2026-03-01", None, "is before start"),
])
async def test_bad_input_gets_422_with_a_clear_error_and_changes_nothing(
        as_alice: httpx.AsyncClient, row_counts, method: str, path: str, body: dict | None, said: str) -> None:
    await as_alice.put("/api/settings/journal", json={"value": {"prep_time": "07:00"}})
    before = await row_counts()
    response = await as_alice.request(method, path, json=body)
    assert response.status_code == 422, response.text
    assert error_of(response)["type"] == "invalid_input" and said in error_of(response)["message"]
    assert await row_counts() == before
    assert (await as_alice.get("/api/settings/journal")).json()["value"]["prep_time"] == "07:00:00"
