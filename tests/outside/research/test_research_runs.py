"""Research runs as tools: in the background, followed and resumed, stopped (nothing written),
one at a time per user, going on when an MCP client disconnects, swept when their process
died, private to their owner; bad input refused on every surface before anything starts."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from datetime import timedelta

import pytest
from sqlalchemy import update
from support.beats import server_up_for
from support.fake_llm import FakeLLM, Reply
from support.mcp_clients import data, http_connect, make_key
from support.outside import Api, Call
from support.research import QUESTION, Recorder, outlining, script_run, serve_pages, until
from support.searxng import FakeSearxng
from support.web_site import FakeSite

from fable_core.db.models import ResearchRun
from fable_core.errors import Conflict, InvalidInput, NotFound
from fable_core.outside.research import runner
from fable_core.outside.research.runner import STALE_AFTER, generations, research_key, sweep_interrupted
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.jobs import run_job


async def test_a_run_goes_on_in_the_background_and_is_followed_from_where_one_left(
        call: Call, alice: Caller, outside_fable: Fable, llm: FakeLLM, held: threading.Event) -> None:
    started = await call("research", question=QUESTION, wait=False)
    assert started["status"] == "running" and started["question"] == QUESTION
    await until(outlining(llm))
    first = Recorder()
    follower = asyncio.ensure_future(outside_fable.dispatcher.call(
        "follow_research", {"run_id": started["id"]}, alice, progress=first))
    await until(lambda: "source" in first.kinds())
    follower.cancel()  # a client that goes away: the run goes on
    seen = first.items[-1][1].id
    held.set()
    rest = Recorder()
    run = await outside_fable.dispatcher.call("follow_research", {"run_id": started["id"], "last_event_id": seen},
                                              alice, progress=rest)
    assert run["status"] == "done" and len(run["notes"]) == 3
    ids = [p.id for _, p in first.items] + [p.id for _, p in rest.items]
    assert ids == [f"{started['id']}:{n}" for n in range(1, len(ids) + 1)]  # no gap, no repeat
    assert rest.kinds()[-1] == "done"
    listed = await call("list_research")
    assert listed == {"items": [{"id": run["id"], "question": QUESTION, "status": "done",
                                 "index_note_id": run["index_note_id"], "created_at": run["created_at"]}]}
    assert (await call("follow_research", run_id=run["id"])) == run  # finished: the stored run


async def test_a_stopped_run_writes_nothing_and_one_runs_at_a_time(
        call: Call, alice: Caller, bob: Caller, llm: FakeLLM, held: threading.Event) -> None:
    started = await call("research", question=QUESTION, wait=False)
    with pytest.raises(Conflict, match=f"research run {started['id']} is still running; stop it or wait"):
        await call("research", question="Something else entirely", wait=False)
    with pytest.raises(NotFound):
        await call("stop_research", run_id=started["id"], as_=bob)
    await until(outlining(llm))
    stopped = await call("stop_research", run_id=started["id"])
    assert stopped["stopped"] is True and stopped["run"]["status"] == "stopped"
    assert stopped["run"]["queries"] and "notes" not in stopped["run"]
    held.set()
    assert (await call("list_notes"))["items"] == []
    again = await call("stop_research", run_id=started["id"])
    assert again["stopped"] is False and again["run"]["status"] == "stopped"


async def test_an_mcp_client_that_disconnects_mid_run_leaves_it_running(
        call: Call, alice: Caller, outside_fable: Fable, outside_url: str, llm: FakeLLM,
        held: threading.Event) -> None:
    key = await make_key(outside_fable, alice)
    heard: list[str | None] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        heard.append(message)

    async def research_then_go_away() -> None:
        async with http_connect(f"{outside_url}/mcp", key) as client:
            await client.call_tool("research", {"question": QUESTION}, progress_callback=progress)

    client = asyncio.ensure_future(research_then_go_away())
    await until(outlining(llm))
    await until(lambda: any('"event": "source"' in (m or "") for m in heard))
    client.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await client
    held.set()
    await generations(outside_fable).wait(research_key(alice.user_id))
    [run] = (await call("list_research"))["items"]
    assert run["status"] == "done"
    assert len((await call("list_notes"))["items"]) == 3


async def test_a_running_run_beats_so_the_sweep_leaves_it(
        call: Call, outside_fable: Fable, llm: FakeLLM, held: threading.Event, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "HEARTBEAT", 0.05)
    started = await call("research", question=QUESTION, wait=False)
    await until(outlining(llm))
    await asyncio.sleep(0.4)
    assert await sweep_interrupted(outside_fable.db, stale_after=0.3) == 0
    assert (await call("get_research", run_id=started["id"]))["status"] == "running"
    held.set()


async def test_a_run_whose_process_died_is_swept_as_interrupted(
        call: Call, alice: Caller, outside_fable: Fable) -> None:
    async with outside_fable.db.transaction() as session:
        session.add(ResearchRun(user_id=alice.user_id, question="Old", question_key="old"))
    assert await sweep_interrupted(outside_fable.db) == 0  # still beating
    await server_up_for(outside_fable.db, STALE_AFTER)
    async with outside_fable.db.transaction() as session:
        await session.execute(update(ResearchRun).values(updated_at=ResearchRun.updated_at - timedelta(seconds=60)))
    [run] = (await call("list_research"))["items"]
    assert await run_job(outside_fable, "sweep_interrupted_research")  # the sweep job, every 2 s where jobs run
    got = await call("get_research", run_id=run["id"])
    assert got["status"] == "interrupted" and got["error"].startswith("the process running this research stopped")
    assert "finished_at" in got


async def test_runs_are_their_owners_only(call: Call, alice: Caller, bob: Caller, outside_fable: Fable) -> None:
    async with outside_fable.db.transaction() as session:
        session.add(ResearchRun(user_id=alice.user_id, question="Mine", question_key="mine", status="done"))
    assert (await call("list_research", as_=bob))["items"] == []
    for name in ("get_research", "follow_research", "stop_research"):
        with pytest.raises(NotFound, match="research run 1 not found"):
            await call(name, run_id=1, as_=bob)


@pytest.mark.parametrize("question", ["", "  ", "ab", "x" * 501])
async def test_bad_questions_are_refused_on_the_dispatcher(call: Call, question: str, llm: FakeLLM) -> None:
    with pytest.raises(InvalidInput, match="question"):
        await call("research", question=question)
    assert llm.requests == [] and (await call("list_research"))["items"] == []


async def test_bad_input_is_refused_over_rest_and_mcp(api: Api, alice: Caller, outside_fable: Fable,
                                                      outside_url: str, llm: FakeLLM) -> None:
    async with api(alice) as http:
        for body in ({}, {"question": ""}, {"question": "x" * 501}, {"question": 42}, {"question": "ok?", "x": 1}):
            for path in ("/research", "/research/stream"):
                answer = await http.post(path, json=body)
                assert answer.status_code == 422, (path, body)
                assert answer.json()["error"]["type"] == "invalid_input"
        for path in ("/research/0", "/research/abc", "/research?limit=0", "/research?cursor=nonsense"):
            assert (await http.get(path)).status_code == 422, path
        assert (await http.get("/research/99")).status_code == 404
    async with http_connect(f"{outside_url}/mcp", await make_key(outside_fable, alice)) as client:
        refused = await client.call_tool("research", {"question": "  "})
        assert refused.is_error and "question" in refused.content[0].text
        listed = await client.call_tool("list_research", {})
        assert not listed.is_error and data(listed) == {"items": []}
    assert llm.requests == []



async def test_the_assistant_researches_from_chat_through_the_registry(
        call: Call, outside_fable: Fable, llm: FakeLLM, searxng: FakeSearxng, site: FakeSite,
        site_url: str) -> None:
    serve_pages(site, searxng, site_url, n=1)
    script_run(llm)
    llm.replies.extend([Reply(tool_calls=[("research", {"question": QUESTION})]), Reply("I wrote research notes.")])
    conversation = await call("create_conversation")
    await call("send_message", conversation_id=conversation["id"], content="Research why sourdough rises")
    assert outside_fable.assistant is not None
    await outside_fable.assistant.wait(conversation["id"])
    answer = await call("follow_answer", conversation_id=conversation["id"])
    assert answer["status"] == "done" and answer["content"] == "I wrote research notes."
    [event] = answer["tool_events"]  # a run goes out to the web: the person confirms it first
    assert event["name"] == "research" and not event["ok"] and event["requires_confirmation"]
    assert (await call("list_research"))["items"] == []
    await call("research", **event["confirm_arguments"])  # the chat's Confirm: the same call, as them
    [run] = (await call("list_research"))["items"]
    assert run["status"] == "done" and run["question"] == QUESTION
