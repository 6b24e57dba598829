"""An answer that ends while nobody follows it tells its owner (a notification of kind
``answer``); one followed to its end, or stopped by its owner, does not."""

from __future__ import annotations

import threading
from typing import Any

from sqlalchemy import select
from support.chat import new_conversation, turn
from support.fake_llm import FakeLLM, Reply

from fable_core.assistant.service import Assistant
from fable_core.db.models import Notification
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def _told(fable: Fable) -> list[tuple[Any, ...]]:
    async with fable.db.reading() as session:
        return [tuple(r) for r in await session.execute(
            select(Notification.user_id, Notification.kind, Notification.title, Notification.body, Notification.data)
            .order_by(Notification.id))]


async def test_an_answer_followed_to_its_end_tells_nobody(
        ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller) -> None:
    conv = await new_conversation(ai_fable, alice)
    fake.replies.append(Reply("Here you are."))
    events = await turn(assistant, alice, conv, "hello")
    assert events[-1].event == "done"
    assert await _told(ai_fable) == []


async def test_an_answer_nobody_follows_tells_its_owner_with_its_beginning(
        ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller, bob: Caller) -> None:
    conv = await new_conversation(ai_fable, alice, title="Trip ideas")
    fake.replies.append(Reply("Kyoto in spring, " + "then Nara " * 40))
    await assistant.send(alice, conv, "where should I go?")
    await assistant.wait(conv)
    [(user, kind, title, body, data)] = await _told(ai_fable)
    assert (user, kind, data) == (alice.user_id, "answer", {"conversation_id": conv})
    assert title.startswith("The assistant answered in ")
    assert body.startswith("Kyoto in spring, then Nara") and body.endswith("…") and len(body) <= 200


async def test_a_follower_who_left_before_the_end_is_told(
        ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller) -> None:
    conv = await new_conversation(ai_fable, alice)
    hold = threading.Event()
    fake.replies.append(Reply("Thinking done.", hold=hold))
    await assistant.send(alice, conv, "take your time")
    stream = assistant.follow(alice, conv)
    assert (await anext(stream)).event == "context"
    await stream.aclose()  # the page was closed
    hold.set()
    await assistant.wait(conv)
    assert [kind for _, kind, *_ in await _told(ai_fable)] == ["answer"]


async def test_an_answer_cut_off_unfollowed_says_so_and_a_stopped_one_tells_nobody(
        ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller) -> None:
    conv = await new_conversation(ai_fable, alice, title="Cut")
    fake.replies.append(Reply("half an ans", cut=True))
    await assistant.send(alice, conv, "go")
    await assistant.wait(conv)
    [(_, _, title, _, _)] = await _told(ai_fable)
    assert title == "The assistant's answer was cut off in Cut"

    other = await new_conversation(ai_fable, alice)
    hold = threading.Event()
    fake.replies.append(Reply("never", hold=hold))
    await assistant.send(alice, other, "go")
    assert assistant.stop(other)
    hold.set()
    await assistant.wait(other)
    assert len(await _told(ai_fable)) == 1
