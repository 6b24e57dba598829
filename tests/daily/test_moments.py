"""Moments through the dispatcher and REST: recorded (now, or at a given time, a local time in
the user's zone), changed, deleted, listed newest first by day range and tag and paged, found by
keyword (no embedder here: ``mode`` says so), the owner's alone, the morning note's section,
and bad input refused with nothing changed."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import select
from support.daily import Api, Call

from fable_core.daily.journal.sections import SECTIONS, PrepDay
from fable_core.db.models import Moment
from fable_core.errors import InvalidInput, NotFound
from fable_core.people.preferences.journal import JournalPrefs
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def _moments(fable: Fable) -> list[tuple]:
    async with fable.db.reading() as session:
        return [tuple(r) for r in await session.execute(
            select(Moment.id, Moment.user_id, Moment.text, Moment.at, Moment.mood, Moment.tags, Moment.location)
            .order_by(Moment.id))]


async def test_a_moment_is_recorded_now_or_at_a_local_time_and_shown_without_empty_fields(call: Call) -> None:
    before = datetime.now(UTC)
    now = await call("record_moment", text="  Coffee with Ana at the market  ")
    assert set(now) == {"id", "text", "at"} and now["text"] == "Coffee with Ana at the market"
    assert before <= datetime.fromisoformat(now["at"]) <= datetime.now(UTC)

    await call("set_setting", key="timezone", value="Europe/Zurich")
    full = await call("record_moment", text="Saw the first snow", at="2026-12-01T07:30", mood="delighted",
                      tags=["Winter", "#walks"], location="Uetliberg")
    assert full["at"] == "2026-12-01T06:30:00Z"  # 07:30 in Zurich
    assert (full["mood"], full["tags"], full["location"]) == ("delighted", ["winter", "walks"], "Uetliberg")
    aware = await call("record_moment", text="Late train", at="2026-12-01T21:00:00-05:00")
    assert aware["at"] == "2026-12-02T02:00:00Z"


async def test_moments_are_listed_newest_first_by_day_range_and_tag_and_paged(call: Call) -> None:
    await call("set_setting", key="timezone", value="Europe/Zurich")
    for day, hour, text, tags in [(1, 9, "a", ["work"]), (1, 23, "b", []), (2, 0, "c", ["work"]),
                                  (3, 12, "d", ["home"]), (4, 8, "e", ["work"])]:
        await call("record_moment", text=text, at=f"2026-11-0{day}T{hour:02}:30", tags=tags)

    first = await call("list_moments", limit=2)
    assert [m["text"] for m in first["items"]] == ["e", "d"] and "mode" not in first
    second = await call("list_moments", limit=2, cursor=first["next_cursor"])
    assert [m["text"] for m in second["items"]] == ["c", "b"]
    last = await call("list_moments", limit=2, cursor=second["next_cursor"])
    assert [m["text"] for m in last["items"]] == ["a"] and "next_cursor" not in last
    # days are the user's: 23:30 on the 1st in Zurich is the 1st, 00:30 on the 2nd is the 2nd
    one = await call("list_moments", start="2026-11-01", end="2026-11-01")
    assert [m["text"] for m in one["items"]] == ["b", "a"]
    two = await call("list_moments", start="2026-11-02", end="2026-11-03")
    assert [m["text"] for m in two["items"]] == ["d", "c"]
    assert [m["text"] for m in (await call("list_moments", tag="work"))["items"]] == ["e", "c", "a"]
    assert [m["text"] for m in (await call("list_moments", tag="work", end="2026-11-02"))["items"]] == ["c", "a"]


async def test_keyword_search_ranks_text_then_tags_mood_and_place_and_says_its_mode(call: Call) -> None:
    await call("record_moment", text="Long walk by the lake with Mia", tags=["family"])
    await call("record_moment", text="Dinner with friends", mood="happy", location="Lake house")
    await call("record_moment", text="Fixed the bike", tags=["chores"])
    found = await call("list_moments", query="lake")
    assert found["mode"] == "keyword"
    assert [m["text"] for m in found["items"]] == ["Long walk by the lake with Mia", "Dinner with friends"]
    assert [m["text"] for m in (await call("list_moments", query="family"))["items"]] == [
        "Long walk by the lake with Mia"]
    assert [m["text"] for m in (await call("list_moments", query="happy"))["items"]] == ["Dinner with friends"]
    page = await call("list_moments", query="lake", limit=1)
    more = await call("list_moments", query="lake", limit=1, cursor=page["next_cursor"])
    assert [m["text"] for m in more["items"]] == ["Dinner with friends"] and "next_cursor" not in more
    assert (await call("list_moments", query="volcano"))["items"] == []


async def test_a_moment_is_changed_and_deleted_by_its_owner_only(call: Call, daily_fable: Fable, bob: Caller,
                                                                 api: Api) -> None:
    m = await call("record_moment", text="Ran 5 km", mood="tired", location="Park", tags=["sport"])
    changed = await call("record_moment", moment_id=m["id"], text="Ran 10 km", mood="", tags=[])
    assert changed == {"id": m["id"], "text": "Ran 10 km", "at": m["at"], "location": "Park"}
    for attempt in ({"moment_id": m["id"], "text": "mine now"}, {"moment_id": m["id"], "mood": "x"}):
        with pytest.raises(NotFound, match=f"moment {m['id']} not found"):
            await call("record_moment", as_=bob, **attempt)
    with pytest.raises(NotFound):
        await call("delete_moment", moment_id=m["id"], as_=bob)
    assert (await call("list_moments", as_=bob))["items"] == []
    assert (await call("list_moments", query="km", as_=bob))["items"] == []
    async with api(bob) as http:
        r = await http.delete(f"/moments/{m['id']}")
        assert r.status_code == 404 and r.json()["error"]["type"] == "not_found"
    [(_, _, text, _, mood, tags, location)] = await _moments(daily_fable)
    assert (text, mood, tags, location) == ("Ran 10 km", None, [], "Park")

    assert await call("delete_moment", moment_id=m["id"]) == {"id": m["id"], "deleted": True}
    assert await _moments(daily_fable) == []
    with pytest.raises(NotFound):
        await call("delete_moment", moment_id=m["id"])


@pytest.mark.parametrize(("arguments", "message"), [
    ({}, "a moment needs its text"),
    ({"text": "   "}, "text"),
    ({"text": "x" * 5001}, "text"),
    ({"text": "x", "at": "yesterday"}, "at"),
    ({"text": "x", "at": (datetime.now(UTC) + timedelta(days=3)).isoformat()}, "is in the future"),
    ({"text": "x", "mood": "m" * 41}, "at most 40 characters"),
    ({"text": "x", "location": "p" * 101}, "at most 100 characters"),
    ({"text": "x", "tags": ["not a tag!"]}, "tag"),
    ({"moment_id": 1}, "nothing to change"),
])
async def test_bad_input_to_record_is_refused_on_every_surface_and_nothing_is_written(
        call: Call, daily_fable: Fable, api: Api, alice: Caller, arguments: dict, message: str) -> None:
    if "moment_id" in arguments:
        arguments = {**arguments, "moment_id": (await call("record_moment", text="kept"))["id"]}
    before = await _moments(daily_fable)
    with pytest.raises(InvalidInput, match=message):
        await call("record_moment", **arguments)
    async with api(alice) as http:
        r = await http.post("/moments", json=arguments)
        assert r.status_code == 422 and message in r.text
    assert await _moments(daily_fable) == before


@pytest.mark.parametrize(("arguments", "message"), [
    ({"start": "2026-11-05", "end": "2026-11-01"}, "end 2026-11-01 is before start 2026-11-05"),
    ({"start": "11/05/2026"}, "start"),
    ({"cursor": "garbage"}, "cursor"),
    ({"limit": 0}, "limit"),
    ({"query": "q" * 501}, "at most 500 characters"),
])
async def test_bad_input_to_list_is_a_clear_error(call: Call, api: Api, alice: Caller, arguments: dict,
                                                  message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        await call("list_moments", **arguments)
    async with api(alice) as http:
        r = await http.get("/moments", params=arguments)
        assert r.status_code == 422 and message in r.text


async def test_moments_are_recorded_listed_and_searched_over_rest(api: Api, alice: Caller) -> None:
    async with api(alice) as http:
        r = await http.post("/moments", json={"text": "Picked apples", "tags": ["autumn"], "mood": "calm"})
        assert r.status_code == 201
        moment = r.json()
        r = await http.post("/moments", json={"moment_id": moment["id"], "location": "Orchard"})
        assert r.status_code == 201 and r.json()["location"] == "Orchard"
        listed = (await http.get("/moments", params={"tag": "autumn"})).json()
        assert [m["id"] for m in listed["items"]] == [moment["id"]]
        found = (await http.get("/moments", params={"query": "apples"})).json()
        assert found["mode"] == "keyword" and found["items"][0]["location"] == "Orchard"
        assert (await http.delete(f"/moments/{moment['id']}")).json() == {"id": moment["id"], "deleted": True}


async def test_the_morning_note_shows_the_last_days_moments(call: Call, daily_fable: Fable, alice: Caller,
                                                            bob: Caller) -> None:
    zone = ZoneInfo("Europe/Zurich")
    await call("set_setting", key="timezone", value="Europe/Zurich")
    for when, text in [("2026-11-30T10:00", "too old"), ("2026-12-02T10:00", "Met Ana"),
                       ("2026-12-04T21:15", "Finished the book"), ("2026-12-05T07:00", "today's: not yet")]:
        await call("record_moment", text=text, at=when, mood="glad" if "book" in text else "")
    await call("record_moment", text="bob's", at="2026-12-04T10:00", as_=bob)
    start = datetime(2026, 12, 5, tzinfo=zone)
    day = PrepDay(alice.user_id, date(2026, 12, 5), zone, start.astimezone(UTC),
                  (start + timedelta(days=1)).astimezone(UTC), JournalPrefs())
    async with daily_fable.db.reading() as session:
        gathered = await SECTIONS["moments"].gather(session, alice, day)
    assert gathered == [{"when": "Wed 02 Dec 10:00", "text": "Met Ana"},
                        {"when": "Fri 04 Dec 21:15", "text": "Finished the book", "mood": "glad"}]
    assert SECTIONS["moments"].render(gathered) == (
        "- Wed 02 Dec 10:00: Met Ana\n- Fri 04 Dec 21:15: Finished the book (glad)")
    assert SECTIONS["moments"].order == 50
    async with daily_fable.db.reading() as session:
        bobs = await SECTIONS["moments"].gather(session, bob, day)
    assert bobs == [{"when": "Fri 04 Dec 11:00", "text": "bob's"}]  # his 10:00 UTC, on the day's clock
