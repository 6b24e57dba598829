"""Idempotency keys (issue 36, item 7): a write sent again with its key answers as the first time
and writes nothing — over REST (``Idempotency-Key``), over MCP (``_meta.idempotencyKey``, the
SDK client), through another replica, and when both copies arrive at once; the key reused for
another call is refused with nothing done; a bad key is refused; keys are forgotten after 48 h."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from mcp import Client
from sqlalchemy import func, select, text
from support.fables import fable_with
from support.mcp_clients import data, http_connect, make_key

from fable_core.config import Settings
from fable_core.db.models import IdempotentCall, TaskLog
from fable_core.errors import Conflict, InvalidInput
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.jobs import run_job
from fable_web.app import create_app


async def _logs(fable: Fable, note_id: int) -> int:
    async with fable.db.reading() as s:
        return int(await s.scalar(select(func.count()).select_from(TaskLog).where(TaskLog.note_id == note_id)) or 0)


async def _task(fable: Fable, caller: Caller, title: str) -> int:
    return int((await fable.call("create_note", {"title": title, "status": "todo"}, caller))["id"])


async def test_a_write_sent_again_with_its_key_answers_the_first_result_and_writes_nothing(
    fable: Fable, alice: Caller
) -> None:
    task = await _task(fable, alice, "Idempotent work")
    d = fable.dispatcher
    first = (await d.run("log_work", {"note_id": task, "minutes": 30}, alice, idempotency_key="k-1")).model_dump()
    again = (await d.run("log_work", {"note_id": task, "minutes": 30}, alice, idempotency_key="k-1")).model_dump()
    assert again == first and await _logs(fable, task) == 1
    await d.run("log_work", {"note_id": task, "minutes": 30}, alice)  # no key: a second entry, as asked
    assert await _logs(fable, task) == 2

    with pytest.raises(InvalidInput, match="was used for another call"):
        await d.run("log_work", {"note_id": task, "minutes": 45}, alice, idempotency_key="k-1")
    with pytest.raises(InvalidInput, match="was used for another call"):
        await d.run("create_note", {"title": "Other"}, alice, idempotency_key="k-1")
    for bad in ("", "has space", "x" * 201, "naïve"):
        with pytest.raises(InvalidInput, match="not 1-200 visible ASCII"):
            await d.run("log_work", {"note_id": task, "minutes": 5}, alice, idempotency_key=bad)
    assert await _logs(fable, task) == 2, "the refused calls wrote nothing"


async def test_two_copies_sent_at_once_write_once_and_both_answer_the_same(fable: Fable, alice: Caller) -> None:
    task = await _task(fable, alice, "Raced work")
    copies = await asyncio.gather(*(fable.dispatcher.run("log_work", {"note_id": task, "minutes": 10}, alice,
                                                         idempotency_key="raced") for _ in range(4)))
    assert len({c.model_dump_json() for c in copies}) == 1
    assert await _logs(fable, task) == 1


async def test_a_key_is_the_caller_s_own(fable: Fable, alice: Caller, bob: Caller) -> None:
    mine = await _task(fable, alice, "Alice's")
    theirs = await _task(fable, bob, "Bob's")
    await fable.dispatcher.run("log_work", {"note_id": mine, "minutes": 5}, alice, idempotency_key="shared-name")
    await fable.dispatcher.run("log_work", {"note_id": theirs, "minutes": 5}, bob, idempotency_key="shared-name")
    assert (await _logs(fable, mine), await _logs(fable, theirs)) == (1, 1)


async def test_over_rest_the_idempotency_key_header_and_through_another_replica(
    fable: Fable, settings: Settings, alice: Caller
) -> None:
    task = await _task(fable, alice, "Work over REST")
    key = await make_key(fable, alice)
    body = {"minutes": 20, "description": "retried"}
    async with fable_with(settings, migrate=False) as other:
        sent = []
        headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": "rest-1"}
        for app in (fable, other, fable):  # the retry may reach any replica
            transport = httpx.ASGITransport(create_app(app))
            async with httpx.AsyncClient(transport=transport, base_url="http://localhost", headers=headers) as http:
                sent.append(await http.post(f"/api/tasks/{task}/logs", json=body))
    assert [r.status_code for r in sent] == [200, 200, 200]
    assert sent[0].json() == sent[1].json() == sent[2].json()
    assert await _logs(fable, task) == 1
    async with httpx.AsyncClient(transport=httpx.ASGITransport(create_app(fable)), base_url="http://localhost",
                                 headers={"Authorization": f"Bearer {key}", "Idempotency-Key": "rest-1"}) as http:
        other_call = await http.post(f"/api/tasks/{task}/logs", json={"minutes": 99})
        bad = await http.post(f"/api/tasks/{task}/logs", json=body, headers={"Idempotency-Key": "two words"})
    assert other_call.status_code == 422 and "was used for another call" in other_call.json()["error"]["message"]
    assert bad.status_code == 422
    assert await _logs(fable, task) == 1


async def test_over_mcp_the_idempotency_key_in_meta(fable: Fable, alice: Caller, mcp_base_url: str) -> None:
    task = await _task(fable, alice, "Work over MCP")
    key = await make_key(fable, alice)
    async with http_connect(f"{mcp_base_url}/mcp", key) as client:
        assert isinstance(client, Client)
        results = [await client.call_tool("log_work", {"note_id": task, "minutes": 15},
                                          meta={"idempotencyKey": "mcp-1"}) for _ in range(2)]
        reused = await client.call_tool("log_work", {"note_id": task, "minutes": 16}, meta={"idempotencyKey": "mcp-1"})
        bad = await client.call_tool("log_work", {"note_id": task, "minutes": 15}, meta={"idempotencyKey": 7})
    assert not results[0].is_error and data(results[0]) == data(results[1])
    assert reused.is_error and "was used for another call" in reused.content[0].text
    assert bad.is_error and "not 1-200 visible ASCII" in bad.content[0].text
    assert await _logs(fable, task) == 1


async def test_keys_are_forgotten_after_two_days(fable: Fable, alice: Caller) -> None:
    task = await _task(fable, alice, "Old work")
    for key in ("old", "new"):
        await fable.dispatcher.run("log_work", {"note_id": task, "minutes": 5}, alice, idempotency_key=key)
    async with fable.db.transaction() as s:
        await s.execute(text("UPDATE idempotent_calls SET created_at = now() - interval '49 hours' "
                             "WHERE user_id = :u AND key = 'old'"), {"u": alice.user_id})
    assert await run_job(fable, "prune_idempotent_calls")
    async with fable.db.reading() as s:
        keys = set((await s.execute(select(IdempotentCall.key).where(IdempotentCall.user_id == alice.user_id)))
                   .scalars())
    assert {"old", "new"} & keys == {"new"}


async def test_a_tool_that_runs_in_phases_claims_its_key_before_it_runs(fable: Fable, alice: Caller) -> None:
    """create_note commits step by step: a repeat after it answers its result; a failed call
    gives its key up, so the repeat (with what was wrong fixed) runs."""
    d = fable.dispatcher
    made = (await d.run("create_note", {"title": "Once only"}, alice, idempotency_key="note-1")).model_dump()
    again = (await d.run("create_note", {"title": "Once only"}, alice, idempotency_key="note-1")).model_dump()
    assert again == made
    async with fable.db.reading() as s:
        count = await s.scalar(text("SELECT count(*) FROM notes WHERE user_id = :u AND title = 'Once only'"),
                               {"u": alice.user_id})
    assert count == 1
    with pytest.raises(Conflict):  # refused inside the tool, after its key was claimed
        await d.run("create_note", {"title": "Once only"}, alice, idempotency_key="note-2")
    async with fable.db.reading() as s:
        assert await s.scalar(select(func.count()).select_from(IdempotentCall).where(
            IdempotentCall.user_id == alice.user_id, IdempotentCall.key == "note-2")) == 0


async def test_two_copies_of_a_call_in_phases_at_once_write_once(fable: Fable, alice: Caller) -> None:
    """The claim joins create_note's write: the copy that comes second answers the first's result,
    or, while the first has not yet kept it, is refused as still running; never a second note."""
    copies = await asyncio.gather(*(fable.dispatcher.run("create_note", {"title": "Raced note"}, alice,
                                                         idempotency_key="raced-note") for _ in range(3)),
                                  return_exceptions=True)
    made = [c for c in copies if not isinstance(c, BaseException)]
    refused = [c for c in copies if isinstance(c, BaseException)]
    assert made and all(c.model_dump() == made[0].model_dump() for c in made)
    assert all(isinstance(r, Conflict) and "still running" in str(r) for r in refused), refused
    async with fable.db.reading() as s:
        assert await s.scalar(text("SELECT count(*) FROM notes WHERE user_id = :u AND title = 'Raced note'"),
                              {"u": alice.user_id}) == 1
    again = await fable.dispatcher.run("create_note", {"title": "Raced note"}, alice, idempotency_key="raced-note")
    assert again.model_dump() == made[0].model_dump()
