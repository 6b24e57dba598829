"""Chat answers across real replicas: two ``fable serve`` on one database behind the round-robin
balancer (one cluster: starting one costs seconds). An answer started through the balancer is
followed live through the replica not writing it, resumed there with ``Last-Event-ID`` (no gap,
no repeat), refused a second time (409) and stopped through it; a replica killed (SIGKILL)
mid-answer leaves its followers on the survivor an ``interrupted`` end within seconds."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import httpx
import pytest
from support.fake_llm import FakeLLM, Reply
from support.mcp_clients import make_key
from support.pace import scaled

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

WORDS = " ".join(f"w{i}" for i in range(40))


async def _events(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The SSE frames of ``response`` as {"id"?, "event", "data"}."""
    frame: dict[str, Any] = {}
    async for line in response.aiter_lines():
        if not line:
            if "event" in frame:
                yield frame
            frame = {}
        elif line.startswith("id: "):
            frame["id"] = line[4:]
        elif line.startswith("event: "):
            frame["event"] = line[7:]
        elif line.startswith("data: "):
            frame["data"] = json.loads(line[6:])


async def _follow(client: httpx.AsyncClient, url: str, conv: int, *, last: str | None = None,
                  upto: int | None = None) -> list[dict[str, Any]]:
    """The answer's events through ``url`` (after ``last``), its ``result`` frame last; with
    ``upto``, only that many events (then the client goes away)."""
    headers = {"Last-Event-ID": last} if last else {}
    got: list[dict[str, Any]] = []
    async with client.stream("GET", f"{url}/api/chat/conversations/{conv}/generation/stream",
                             headers=headers) as response:
        assert response.status_code == 200
        async for event in _events(response):
            got.append(event)
            if upto is not None and len(got) == upto:
                break
    return got


def _seqs(events: list[dict[str, Any]]) -> list[int]:
    return [int(e["id"].split(":")[1]) for e in events if "id" in e]


def _other(cluster: Any, path: str) -> str:
    """The replica that did not answer the last ``POST path`` through the balancer."""
    writer = cluster.proxy.upstream_of("POST", path)[-1]
    return str(cluster.replicas[1 - writer].url)


@pytest.mark.slow
async def test_an_answer_is_followed_resumed_refused_stopped_and_survives_its_replica_through_the_other(
    cluster: Callable[..., AbstractAsyncContextManager[Any]], fable: Fable, alice: Caller,
    replicas_llm: tuple[FakeLLM, str],
) -> None:
    fake, _ = replicas_llm
    key = await make_key(fable, alice)
    async with (cluster(2) as c,
                httpx.AsyncClient(headers={"authorization": f"Bearer {key}"}, timeout=scaled(30)) as client):
        conv = (await client.post(f"{c.url}/api/chat/conversations", json={})).json()["id"]
        path = f"/api/chat/conversations/{conv}/messages"
        fake.replies.append(Reply(WORDS, delay=0.03))
        sent = await client.post(f"{c.url}{path}", json={"content": "count"})
        assert sent.status_code == 202, sent.text
        other = _other(c, path)  # the replica not writing the answer
        again = await client.post(f"{other}{path}", json={"content": "more"})
        assert again.status_code == 409 and again.json()["error"]["type"] == "conflict"

        first = await _follow(client, other, conv, upto=5)  # live through it, then the connection drops
        rest = await _follow(client, other, conv, last=first[-1]["id"])
        events, result = first + rest[:-1], rest[-1]
        assert _seqs(events) == list(range(1, len(events) + 1)), "no gap, no repeat"
        assert events[-1]["event"] == "done" and result["event"] == "result"
        assert "".join(e["data"]["text"] for e in events if e["event"] == "token") == WORDS
        assert (result["data"]["content"], result["data"]["status"]) == (WORDS, "done")

        fake.replies.append(Reply(WORDS * 10, delay=0.03))  # the next answer, stopped through the other
        sent = await client.post(f"{c.url}{path}", json={"content": "long"})
        assert sent.status_code == 202, sent.text
        other = _other(c, path)
        following = asyncio.create_task(_follow(client, other, conv))
        await asyncio.sleep(0.3)
        stopped = await client.post(f"{other}/api/chat/conversations/{conv}/generation/stop")
        assert stopped.json() == {"stopped": True}
        events = await asyncio.wait_for(following, scaled(10))
        assert events[-2]["event"] == "done" and events[-2]["data"]["stopped"] is True, events[-2:]
        assert events[-1]["data"]["status"] == "stopped"
        assert _seqs(events) == list(range(1, len(events)))

        a, b = c.replicas  # a third answer, written by a; a is killed while b's follower reads it
        fake.replies.append(Reply(WORDS * 50, delay=0.05))
        sent = await client.post(f"{a.url}{path}", json={"content": "go on"})
        assert sent.status_code == 202, sent.text
        following = asyncio.create_task(_follow(client, b.url, conv))
        await asyncio.sleep(2.5)  # some of it written, and stored (every 2 s)
        a.proc.kill()
        killed = time.monotonic()
        events = await asyncio.wait_for(following, 30)
        waited = time.monotonic() - killed
        *answer, end, result = events
        assert _seqs([*answer, end]) == list(range(1, len(answer) + 2)), "no gap, no repeat"
        assert sum(e["event"] == "token" for e in answer) > 3
        assert end["event"] == "error" and end["data"]["status"] == "interrupted"
        assert result["event"] == "result" and result["data"]["status"] == "interrupted"
        assert result["data"]["content"].startswith("w0 w1 w2")  # the partial answer, kept
        assert waited < 20, f"the follower waited {waited:.1f} s"  # 10 s without a beat, then a sweep
