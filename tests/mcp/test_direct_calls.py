"""The direct path for quiet 2026-07-28 tool calls answers exactly as the SDK would.

Two servers run over the same database: the app as shipped, and one with ``direct_calls=False``
that sends every request through the SDK. Each request below goes to both; status,
content type and JSON body must be the same. The counter shows which requests the direct path
answered itself, so a path that silently handed everything to the SDK would fail here too.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from support.mcp_clients import http_connect, make_key
from support.servers import serve

from fable_core.caller import Caller
from fable_core.db.models import Note
from fable_core.runtime import Fable
from fable_mcp.http import McpHttp

VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _app(mcp: McpHttp) -> Any:
    from contextlib import asynccontextmanager

    from starlette.applications import Starlette

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with mcp.lifespan():
            yield

    return Starlette(routes=mcp.routes, lifespan=lifespan)


@pytest.fixture(scope="module")
async def servers(fable: Fable) -> AsyncIterator[tuple[McpHttp, str, str]]:
    """(the shipped endpoint, its URL, the URL of an SDK-only twin)."""
    direct, sdk_only = McpHttp(fable), McpHttp(fable, direct_calls=False)
    async with serve(_app(direct)) as direct_url, serve(_app(sdk_only)) as sdk_url:
        yield direct, f"{direct_url}/mcp", f"{sdk_url}/mcp"


def call(tool: str, arguments: Any, *, meta: dict[str, Any] | None = META, id_: Any = 7) -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}


def headers(key: str, tool: str = "read_note", **extra: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}", "accept": "application/json, text/event-stream",
            "content-type": "application/json", "mcp-protocol-version": VERSION,
            "mcp-method": "tools/call", "mcp-name": tool, **extra}


async def both(servers: tuple[McpHttp, str, str], head: dict[str, str], body: Any) -> tuple[int, Any]:
    """POST to both servers; assert they agree and return (status, JSON body or text)."""
    _, direct_url, sdk_url = servers
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    answers = []
    async with httpx.AsyncClient(timeout=30) as http:
        for url in (direct_url, sdk_url):
            r = await http.post(url, content=content, headers=head)
            kind = r.headers.get("content-type", "")
            answers.append((r.status_code, kind, r.json() if kind == "application/json" else r.text))
    assert answers[0] == answers[1]
    return answers[0][0], answers[0][2]


@pytest.fixture
async def key(fable: Fable, alice: Caller) -> str:
    return await make_key(fable, alice)


async def note_id(fable: Fable, alice: Caller, title: str) -> int:
    result = await fable.dispatcher.call("create_note", {"title": title, "body": "# Plan\nsome text"}, alice)
    return int(result["id"])


async def test_reads_and_tool_errors_match_the_sdk_and_take_the_direct_path(
        servers: tuple[McpHttp, str, str], fable: Fable, alice: Caller, key: str) -> None:
    direct = servers[0].direct
    assert direct is not None
    nid = await note_id(fable, alice, "Direct path note")
    before = direct.answered
    status, body = await both(servers, headers(key), call("read_note", {"note_id": nid}))
    assert status == 200 and body["result"]["structuredContent"]["title"] == "Direct path note"
    assert body["result"]["resultType"] == "complete" and "io.modelcontextprotocol/serverInfo" in body["result"]["_meta"]
    for arguments in ({"note_id": 999_999_999}, {"note_id": "seven"}, {"note_id": nid, "section": "Nope"}, {}):
        status, body = await both(servers, headers(key), call("read_note", arguments))
        assert status == 200 and body["result"]["isError"] is True
    _, body = await both(servers, headers(key, "no_such_tool"), call("no_such_tool", {}))
    assert body["result"]["isError"] is True
    _, body = await both(servers, headers(key), call("read_note", {"note_id": nid}, id_="text-id"))
    assert body["id"] == "text-id"
    assert direct.answered == before + 7


async def test_a_write_goes_through_once_and_a_read_key_is_refused_without_writing(
        servers: tuple[McpHttp, str, str], fable: Fable, alice: Caller, key: str) -> None:
    _, direct_url, _ = servers
    async with httpx.AsyncClient(timeout=30) as http:
        r = await http.post(direct_url, json=call("create_note", {"title": "Written directly"}),
                            headers=headers(key, "create_note"))
    assert r.status_code == 200 and r.json()["result"]["structuredContent"]["title"] == "Written directly"
    read_key = await make_key(fable, alice, "read")
    _, body = await both(servers, headers(read_key, "create_note"),
                              call("create_note", {"title": "Must not exist"}))
    assert body["result"]["isError"] is True and "scope" in body["result"]["content"][0]["text"]
    async with fable.db.reading() as s:
        assert await s.scalar(select(func.count()).select_from(Note).where(Note.title == "Must not exist")) == 0
        assert await s.scalar(select(func.count()).select_from(Note).where(Note.title == "Written directly")) == 1


@pytest.mark.parametrize("case", [
    "no_meta", "version_header_mismatch", "method_header_mismatch", "name_header_mismatch",
    "json_only_accept", "text_content_type", "malformed_json", "batch", "notification",
    "params_not_an_object", "name_not_a_string", "arguments_not_an_object", "bad_jsonrpc_version",
    "progress_token", "log_level", "duplicated_routing_header",
])
async def test_everything_else_is_the_sdks_answer(
        servers: tuple[McpHttp, str, str], fable: Fable, alice: Caller, key: str, case: str) -> None:
    direct = servers[0].direct
    assert direct is not None
    nid = await note_id(fable, alice, f"Fallback {case}")
    head, body = headers(key), call("read_note", {"note_id": nid})
    content: Any = body
    match case:
        case "no_meta":
            content = call("read_note", {"note_id": nid}, meta=None)
        case "version_header_mismatch":
            head["mcp-protocol-version"] = "2025-11-25-x"
        case "method_header_mismatch":
            head["mcp-method"] = "tools/list"
        case "name_header_mismatch":
            head["mcp-name"] = "create_note"
        case "json_only_accept":
            head["accept"] = "application/json"
        case "text_content_type":
            head["content-type"] = "text/plain"
        case "malformed_json":
            content = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
        case "batch":
            content = [body]
        case "notification":
            content = {k: v for k, v in body.items() if k != "id"}
        case "params_not_an_object":
            content = {**body, "params": [1]}
        case "name_not_a_string":
            content = {**body, "params": {**body["params"], "name": 5}}
        case "arguments_not_an_object":
            content = {**body, "params": {**body["params"], "arguments": [nid]}}
        case "bad_jsonrpc_version":
            content = {**body, "jsonrpc": "1.0"}
        case "progress_token":
            content = call("read_note", {"note_id": nid}, meta={**META, "progressToken": "p1"})
        case "log_level":
            content = call("read_note", {"note_id": nid}, meta={**META, "io.modelcontextprotocol/logLevel": "error"})
        case "duplicated_routing_header":
            pass  # sent below with the raw header twice
    before = direct.answered
    if case == "duplicated_routing_header":
        await _duplicated_header_agrees(servers, head, body)
    else:
        await both(servers, head, content)
    assert direct.answered == before


async def _duplicated_header_agrees(servers: tuple[McpHttp, str, str], head: dict[str, str], body: Any) -> None:
    _, direct_url, sdk_url = servers
    raw = [(k, v) for k, v in head.items()] + [("mcp-method", "tools/call")]
    answers = []
    async with httpx.AsyncClient(timeout=30) as http:
        for url in (direct_url, sdk_url):
            r = await http.post(url, content=json.dumps(body).encode(), headers=raw)
            answers.append((r.status_code, r.json()))
    assert answers[0] == answers[1] and answers[0][0] >= 400


async def test_the_sdk_client_gets_its_results_over_the_direct_path(
        servers: tuple[McpHttp, str, str], fable: Fable, alice: Caller, key: str) -> None:
    direct, direct_url, _ = servers
    assert direct.direct is not None
    nid = await note_id(fable, alice, "Read by the SDK client")
    before = direct.direct.answered
    async with http_connect(direct_url, key) as client:
        result = await client.call_tool("read_note", {"note_id": nid})
        missing = await client.call_tool("read_note", {"note_id": 999_999_999})
    assert result.structured_content and result.structured_content["title"] == "Read by the SDK client"
    assert missing.is_error
    assert direct.direct.answered >= before + 2


def _sse_events(text: str) -> tuple[int, list[dict[str, Any]]]:
    """(how many ``: ping`` comments, the JSON of each ``data:`` line) of an SSE body."""
    lines = text.split("\r\n")
    pings = sum(1 for line in lines if line == ": ping")
    return pings, [json.loads(line[5:]) for line in lines if line.startswith("data:")]


async def test_a_call_slower_than_the_window_streams_keepalives_like_the_sdk(
        servers: tuple[McpHttp, str, str], fable: Fable, alice: Caller, key: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Behind a proxy with an idle-read timeout a silent response is cut off; the SDK commits
    to SSE and pings once its deferral window passes, and the direct path must too. A row lock
    held here keeps update_note waiting for several windows (shortened from 15 s)."""
    from mcp.server import _streamable_http_modern as sdk_modern

    monkeypatch.setattr(sdk_modern, "_SSE_PING_INTERVAL", 0.2)
    _, direct_url, sdk_url = servers
    direct = servers[0].direct
    assert direct is not None
    nid = await note_id(fable, alice, "Locked note")
    answers = []
    async with httpx.AsyncClient(timeout=30) as http:
        for url, title in ((direct_url, "Direct after wait"), (sdk_url, "SDK after wait")):
            before = direct.answered
            async with fable.db.transaction() as locking:
                await locking.execute(select(Note.id).where(Note.id == nid).with_for_update())
                pending = asyncio.ensure_future(http.post(
                    url, json=call("update_note", {"note_id": nid, "title": title}),
                    headers=headers(key, "update_note")))
                await asyncio.sleep(0.9)
                assert not pending.done()
            r = await pending
            answers.append((r.headers["content-type"], r.headers.get("cache-control"), *_sse_events(r.text)))
            assert direct.answered == before + (url == direct_url)
    for kind, cache, pings, events in answers:
        assert (kind, cache) == ("text/event-stream", "no-cache, no-transform")
        assert pings >= 3 and len(events) == 1 and events[0]["id"] == 7
    titles = [a[3][0]["result"]["structuredContent"]["title"] for a in answers]
    assert titles == ["Direct after wait", "SDK after wait"]
    assert answers[0][3][0]["result"].keys() == answers[1][3][0]["result"].keys()
