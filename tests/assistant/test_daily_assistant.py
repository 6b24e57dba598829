"""The daily domains with a model, against the fake Ollama at the wire: the profile reaches the
system prompt of every chat turn, the assistant records a moment and an observation from a
conversation through the registry, the profile's summary is learned in the background, and
moments are found by meaning when an embedding model answers."""

from __future__ import annotations

from sqlalchemy import select
from support.chat import new_conversation, turn
from support.fake_llm import FakeLLM, Reply

from fable_core.assistant.profile_learning import learn_summaries
from fable_core.assistant.service import Assistant
from fable_core.db.models import Moment
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.jobs import run_job


async def test_the_model_receives_the_profile_in_its_system_prompt(
        ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller, bob: Caller) -> None:
    await ai_fable.call("update_profile", {"facts": ["I live in Zurich", "My dog is called Bruno"]}, alice)
    await ai_fable.call("record_observation", {"text": "Prefers answers in bullet points"}, alice)
    conversation = await new_conversation(ai_fable, alice)
    await turn(assistant, alice, conversation, "What should I do this weekend?")
    system = fake.chat_bodies()[0]["messages"][0]
    assert system["role"] == "system"
    assert ("About alice (their profile):\nThey told you:\n- I live in Zurich\n- My dog is called Bruno\n\n"
            "You noticed:\n- Prefers answers in bullet points") in system["content"]

    fake.reset()
    await turn(assistant, bob, await new_conversation(ai_fable, bob), "Hello")
    prompt = fake.chat_bodies()[0]["messages"][0]["content"]
    assert "their profile" not in prompt and "Bruno" not in prompt  # bob has none, and never alice's


async def test_the_assistant_records_a_moment_and_an_observation_from_the_conversation(
        ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller) -> None:
    conversation = await new_conversation(ai_fable, alice)
    fake.replies.extend([
        Reply("", [("record_moment", {"text": "Climbed the Uetliberg with Mia", "mood": "proud", "tags": ["hike"]}),
                   ("record_observation", {"text": "Enjoys hiking with Mia"})]),
        Reply("What a day! I noted it."),
    ])
    events = await turn(assistant, alice, conversation, "A moment to keep: we climbed the Uetliberg, Mia and I!")
    results = [e.data for e in events if e.event == "tool_result"]
    assert [r["ok"] for r in results] == [True, True]
    assert "record_moment" in {t["function"]["name"] for t in fake.chat_bodies()[0]["tools"]}  # picked for it
    moments = await ai_fable.call("list_moments", {}, alice)
    assert [(m["text"], m["mood"], m["tags"]) for m in moments["items"]] == [
        ("Climbed the Uetliberg with Mia", "proud", ["hike"])]
    profile = await ai_fable.call("get_profile", {}, alice)
    assert [o["text"] for o in profile["observations"]] == ["Enjoys hiking with Mia"]


async def test_the_profile_summary_is_learned_when_it_changed_and_only_then(
        ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller, bob: Caller) -> None:
    await assistant.status.check()  # the model answers
    await ai_fable.call("update_profile", {"facts": ["I teach maths"]}, alice)
    await ai_fable.call("record_observation", {"text": "Grades papers on Sunday evenings"}, alice)
    await ai_fable.call("update_profile", {"facts": []}, bob)  # an empty profile: nothing to learn
    fake.plain_replies.append(Reply("  Alice teaches maths and grades papers on Sunday evenings.  "))

    assert await learn_summaries(ai_fable) == 1
    [request] = fake.chat_bodies()
    assert "- I teach maths" in request["messages"][1]["content"]
    assert "- Grades papers on Sunday evenings" in request["messages"][1]["content"]
    profile = await ai_fable.call("get_profile", {}, alice)
    assert profile["summary"] == "Alice teaches maths and grades papers on Sunday evenings."
    assert await learn_summaries(ai_fable) == 0 and len(fake.chat_bodies()) == 1  # nothing changed since

    await ai_fable.call("record_observation", {"text": "Plays the cello"}, alice)
    fake.plain_replies.append(Reply("Alice teaches maths, grades on Sundays, plays the cello."))
    assert await run_job(ai_fable, "learn_profiles")
    assert (await ai_fable.call("get_profile", {}, alice))["summary"] == (
        "Alice teaches maths, grades on Sundays, plays the cello.")
    prompt_before = len(fake.chat_bodies())
    fake.plain_replies.append(Reply(""))  # an empty answer is not stored
    await ai_fable.call("update_profile", {"facts": ["I teach maths and physics"]}, alice)
    assert await learn_summaries(ai_fable) == 0 and len(fake.chat_bodies()) == prompt_before + 1
    assert (await ai_fable.call("get_profile", {}, alice))["summary"].endswith("plays the cello.")


async def test_moments_are_found_by_meaning_when_an_embedder_answers(
        ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller, bob: Caller) -> None:
    walk = await ai_fable.call("record_moment", {"text": "Long walk by the lake with Mia"}, alice)
    await ai_fable.call("record_moment", {"text": "Filed the tax return"}, alice)
    await ai_fable.call("record_moment", {"text": "Walk lake Mia sunny"}, bob)
    async with ai_fable.db.reading() as session:
        models = set((await session.execute(select(Moment.embedding_model))).scalars())
    assert models == {assistant.embedder.model}
    query = "lake walk sunny"  # "sunny" is in none of alice's moments: words alone find nothing
    words = await ai_fable.call("list_moments", {"query": "sunny"}, alice)
    assert words["items"] == [] and words["mode"] == "hybrid"
    found = await ai_fable.call("list_moments", {"query": query}, alice)
    assert found["mode"] == "hybrid" and [m["id"] for m in found["items"]] == [walk["id"]]

    changed = await ai_fable.call("record_moment", {"moment_id": walk["id"], "text": "Filed the receipts"}, alice)
    assert changed["text"] == "Filed the receipts"
    after = await ai_fable.call("list_moments", {"query": query}, alice)
    assert walk["id"] not in [m["id"] for m in after["items"]]  # its vector changed with its text
