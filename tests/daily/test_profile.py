"""The profile through the dispatcher and REST: facts the user edits, observations the
assistant records (the newest kept), the summary the user may write, each user's own only,
bad input refused with nothing changed, and no model configured: nothing learned, nothing fails."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from support.daily import Api, Call

from fable_core.assistant.profile_learning import learn_summaries
from fable_core.db.models import Profile, ProfileObservation
from fable_core.errors import InvalidInput
from fable_core.people.profile import profile as profile_module
from fable_core.people.profile.prompt import profile_prompt
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.jobs import run_job


async def _state(fable: Fable) -> tuple[list[tuple], list[tuple]]:
    async with fable.db.reading() as session:
        profiles = [tuple(r) for r in await session.execute(
            select(Profile.user_id, Profile.facts, Profile.summary).order_by(Profile.user_id))]
        observations = [tuple(r) for r in await session.execute(
            select(ProfileObservation.user_id, ProfileObservation.text).order_by(ProfileObservation.id))]
    return profiles, observations


async def test_facts_observations_and_summary_are_the_users_to_see_and_edit(
        call: Call, daily_fable: Fable, bob: Caller) -> None:
    assert await call("get_profile") == {"facts": []}
    first = await call("record_observation", text="Prefers short answers")
    await call("record_observation", text="Runs on weekends")
    profile = await call("update_profile", facts=["I live in Zurich", "I have a dog, Bruno", "I live in Zurich"])
    assert profile["facts"] == ["I live in Zurich", "I have a dog, Bruno"]  # said twice, kept once
    assert [o["text"] for o in profile["observations"]] == ["Runs on weekends", "Prefers short answers"]
    assert "summary" not in profile and "summary_at" not in profile

    written = await call("update_profile", summary="Lives in Zurich with Bruno; likes it brief.", forget=[first["id"]])
    assert written["summary"] == "Lives in Zurich with Bruno; likes it brief." and written["summary_at"]
    assert [o["text"] for o in written["observations"]] == ["Runs on weekends"]
    assert written["facts"] == ["I live in Zurich", "I have a dog, Bruno"]  # untouched

    assert await call("get_profile", as_=bob) == {"facts": []}
    bobs = await call("update_profile", forget=[o["id"] for o in written["observations"]], as_=bob)
    assert bobs == {"facts": []}  # alice's observation ids are not his to forget
    assert len((await call("get_profile"))["observations"]) == 1


async def test_only_the_newest_observations_are_kept(call: Call, daily_fable: Fable, alice: Caller) -> None:
    keep = profile_module.MAX_OBSERVATIONS
    async with daily_fable.db.transaction() as session:
        session.add_all([ProfileObservation(user_id=alice.user_id, text=f"seen {n}") for n in range(keep + 3)])
    await call("record_observation", text="the newest one")
    observations = (await call("get_profile"))["observations"]
    assert len(observations) == keep and observations[0]["text"] == "the newest one"
    assert observations[-1]["text"] == "seen 4"


@pytest.mark.parametrize(("name", "arguments", "message"), [
    ("update_profile", {}, "nothing to change"),
    ("update_profile", {"facts": [""]}, "facts"),
    ("update_profile", {"facts": ["x" * 301]}, "facts"),
    ("update_profile", {"facts": ["a fact"] * 51}, "facts"),
    ("update_profile", {"summary": "s" * 4001}, "summary"),
    ("update_profile", {"forget": [0]}, "forget"),
    ("record_observation", {"text": "ok"}, "text"),
    ("record_observation", {}, "text"),
])
async def test_bad_input_is_refused_on_every_surface_and_nothing_changes(
        call: Call, daily_fable: Fable, api: Api, alice: Caller, name: str, arguments: dict, message: str) -> None:
    await call("update_profile", facts=["I like tea"])
    before = await _state(daily_fable)
    with pytest.raises(InvalidInput, match=message):
        await call(name, **arguments)
    async with api(alice) as http:
        r = await (http.patch("/profile", json=arguments) if name == "update_profile"
                   else http.post("/profile/observations", json=arguments))
        assert r.status_code == 422 and message in r.text
    assert await _state(daily_fable) == before


async def test_the_profile_over_rest(api: Api, alice: Caller) -> None:
    async with api(alice) as http:
        assert (await http.get("/profile")).json() == {"facts": []}
        r = await http.post("/profile/observations", json={"text": "Writes in the evening"})
        assert r.status_code == 201 and r.json()["text"] == "Writes in the evening"
        r = await http.patch("/profile", json={"facts": ["Teacher"]})
        assert r.status_code == 200 and r.json()["facts"] == ["Teacher"]
        assert [o["text"] for o in (await http.get("/profile")).json()["observations"]] == ["Writes in the evening"]


async def test_without_a_model_nothing_is_learned_and_nothing_fails(call: Call, daily_fable: Fable,
                                                                    alice: Caller) -> None:
    await call("update_profile", facts=["I live in Zurich"])
    assert "llm" not in daily_fable.availability  # LLM_PROVIDER=none
    assert await learn_summaries(daily_fable) == 0
    assert await run_job(daily_fable, "learn_profiles")
    assert "summary" not in await call("get_profile")


async def test_the_prompt_block_is_compact_and_absent_for_an_empty_profile(
        call: Call, daily_fable: Fable, alice: Caller, bob: Caller) -> None:
    async with daily_fable.db.reading() as session:
        assert await profile_prompt(session, alice) is None
    await call("record_observation", text="Prefers short answers")
    await call("update_profile", facts=["I live in Zurich"])
    async with daily_fable.db.reading() as session:
        assert await profile_prompt(session, alice) == (
            "They told you:\n- I live in Zurich\n\nYou noticed:\n- Prefers short answers")
    await call("update_profile", summary="A Zurich teacher who likes brevity.")
    await call("update_profile", facts=[f"fact {n} " + "x" * 200 for n in range(20)])
    async with daily_fable.db.reading() as session:
        block = await profile_prompt(session, alice)
        assert await profile_prompt(session, bob) is None
    assert block is not None and block.startswith("A Zurich teacher who likes brevity.\n\nThey told you:\n- fact 0")
    assert len(block) == 2000 and block.endswith("…") and "You noticed" not in block
