"""Deleting several conversations at once (``delete_conversations``): all or none, other
people's conversations are NotFound and stop the whole call, running answers are stopped."""

from __future__ import annotations

import pytest
from support.chat import new_conversation
from support.fake_llm import FakeLLM, Reply
from support.users import PASSWORD
from support.web import error_of, signed_in

from fable_core.assistant.service import Assistant
from fable_core.errors import InvalidInput, NotFound
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app


async def _titles(fable: Fable, caller: Caller) -> list[str]:
    return sorted(c["title"] for c in (await fable.call("list_conversations", {}, caller))["items"])


async def test_several_conversations_go_in_one_call_and_others_stay(fable: Fable, alice: Caller) -> None:
    ids = [await new_conversation(fable, alice, title=t) for t in ("One", "Two", "Three", "Four")]
    result = await fable.call("delete_conversations", {"conversation_ids": [ids[0], ids[2], ids[3], ids[0]]}, alice)
    assert result == {"ids": [ids[0], ids[2], ids[3]], "deleted": 3}
    assert await _titles(fable, alice) == ["Two"]


async def test_an_id_the_caller_cannot_see_deletes_nothing(fable: Fable, alice: Caller, bob: Caller) -> None:
    mine = [await new_conversation(fable, alice, title=t) for t in ("One", "Two")]
    theirs = await new_conversation(fable, bob, title="Bob's")
    for ids in ([*mine, theirs], [*mine, 2**31 - 1]):
        with pytest.raises(NotFound) as refused:
            await fable.call("delete_conversations", {"conversation_ids": ids}, alice)
        assert refused.value.details["conversation_ids"] == ids[-1:]
        assert "nothing was deleted" in refused.value.message
    for bad in ([], [0], ["one"], list(range(1, 202))):
        with pytest.raises(InvalidInput):
            await fable.call("delete_conversations", {"conversation_ids": bad}, alice)
    assert await _titles(fable, alice) == ["One", "Two"]
    assert await _titles(fable, bob) == ["Bob's"]


async def test_the_rest_route_deletes_all_or_says_which_are_missing(fable: Fable, alice: Caller, bob: Caller) -> None:
    mine = [await new_conversation(fable, alice, title=t) for t in ("One", "Two", "Three")]
    theirs = await new_conversation(fable, bob, title="Bob's")
    async with signed_in(create_app(fable), "alice", PASSWORD) as client:
        refused = await client.post("/api/chat/conversations/delete", json={"conversation_ids": [mine[0], theirs]})
        assert refused.status_code == 404 and error_of(refused)["details"]["conversation_ids"] == [theirs]
        assert await _titles(fable, alice) == ["One", "Three", "Two"]
        done = await client.post("/api/chat/conversations/delete", json={"conversation_ids": mine[:2]})
        assert done.status_code == 200 and done.json() == {"ids": mine[:2], "deleted": 2}
    assert await _titles(fable, alice) == ["Three"]


async def test_a_running_answer_is_stopped_with_its_conversation(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    busy = await new_conversation(ai_fable, alice)
    idle = await new_conversation(ai_fable, alice)
    fake.replies.append(Reply("slow " * 200, delay=0.01))
    await assistant.send(alice, busy, "count for me")
    await ai_fable.call("delete_conversations", {"conversation_ids": [busy, idle]}, alice)
    with pytest.raises(NotFound):
        await anext(assistant.follow(alice, busy))
    await assistant.wait(busy)
    assert (await ai_fable.call("list_conversations", {}, alice))["items"] == []
