"""``fable mcp`` over stdio: only protocol on stdout, and which user it acts as."""

from __future__ import annotations

import asyncio
import json
import os
import signal

import pytest
from sqlalchemy import select
from support.mcp_clients import FABLE_BIN, make_key
from support.pace import scaled

from fable_core.db.models import Note, User
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

MESSAGES = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
     "params": {"name": "create_note", "arguments": {"title": "Over stdio"}}},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "no_such_tool"}},
]


async def _run(env: dict[str, str], *args: str, messages: list[dict] = MESSAGES) -> tuple[int, str, str]:
    """Run ``fable mcp ARGS``, answer-driven: send everything, close stdin once every id answered."""
    proc = await asyncio.create_subprocess_exec(
        str(FABLE_BIN), "mcp", *args, env={**os.environ, **env},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdin and proc.stdout and proc.stderr
    proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages).encode())
    await proc.stdin.drain()
    waiting = {m["id"] for m in messages if "id" in m}
    lines = []
    try:
        async with asyncio.timeout(scaled(60)):
            while waiting and (line := await proc.stdout.readline()):
                lines.append(line.decode())
                waiting.discard(json.loads(line).get("id"))
            proc.stdin.close()
            lines += [line.decode() for line in (await proc.stdout.read()).splitlines(keepends=True)]
            stderr = (await proc.stderr.read()).decode()
            code = await proc.wait()
    finally:
        if proc.returncode is None:  # a hung server must not outlive its test
            proc.kill()
            await proc.wait()
    return code, "".join(lines), stderr


async def test_stdout_carries_nothing_but_protocol(stdio_env: dict[str, str], alice: Caller) -> None:
    code, stdout, stderr = await _run({**stdio_env, "FABLE_LOG_LEVEL": "debug"}, "--user", "alice")
    messages = list(map(json.loads, stdout.splitlines()))
    replies = {m["id"]: m for m in messages if "id" in m}
    notifications = [m for m in messages if "id" not in m]
    assert code == 0 and all(m["jsonrpc"] == "2.0" for m in messages)
    assert replies[1]["result"]["serverInfo"]["name"] == "fable"
    assert json.loads(replies[2]["result"]["content"][0]["text"])["title"] == "Over stdio"
    assert replies[3]["result"]["isError"] is True
    assert notifications == [{"jsonrpc": "2.0", "method": "notifications/message", "params": {
        "level": "warning", "logger": "fable",
        "data": {"tool": "no_such_tool", "type": "unknown_tool", "message": "no tool named 'no_such_tool'"}}}]
    assert "DeprecationWarning" not in stderr  # sending log messages to 2025 clients is deliberate


async def test_an_empty_database_gets_its_first_user(stdio_env: dict[str, str], fable: Fable) -> None:
    code, _, stderr = await _run({**stdio_env, "USER": "sam", "LOGNAME": "sam"})
    assert code == 0 and "created the first user 'sam'" in stderr
    async with fable.db.transaction() as session:
        users = (await session.execute(select(User.username, User.role))).all()
        titles = (await session.execute(select(Note.title))).scalars().all()
    assert users == [("sam", "admin")] and titles == ["Over stdio"]


async def test_the_only_user_is_the_default(stdio_env: dict[str, str], fable: Fable, alice: Caller) -> None:
    code, _, _ = await _run(stdio_env)
    async with fable.db.transaction() as session:
        owners = (await session.execute(select(Note.user_id))).scalars().all()
    assert code == 0 and owners == [alice.user_id]


@pytest.mark.parametrize(("args", "message"), [
    ((), "this Fable has 2 users: pass --user NAME"),
    (("--user", "nobody"), "no user named 'nobody'"),
])
async def test_an_ambiguous_or_unknown_user_is_refused_on_stderr(
    stdio_env: dict[str, str], alice: Caller, bob: Caller, args: tuple[str, ...], message: str
) -> None:
    code, stdout, stderr = await _run(stdio_env, *args, messages=MESSAGES[:1])
    assert code == 1 and stdout == "" and message in stderr


@pytest.mark.parametrize("remote", [False, True], ids=["local", "bridge"])
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
async def test_a_signal_while_serving_exits_at_once(stdio_env: dict[str, str], mcp_base_url: str,
                                                    fable: Fable, alice: Caller, remote: bool,
                                                    signum: int, code: int) -> None:
    """How hosts stop a server: a signal, stdin still open. The SDK reads stdin in a thread that
    no cancellation can stop; the server must not wait for the client's next line."""
    args, env = ["--user", "alice"], stdio_env
    if remote:
        args = ["--remote", f"{mcp_base_url}/mcp"]
        env = {**stdio_env, "FABLE_API_KEY": await make_key(fable, alice)}
    proc = await asyncio.create_subprocess_exec(
        str(FABLE_BIN), "mcp", *args, env={**os.environ, **env},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdin and proc.stdout and proc.stderr
    try:
        proc.stdin.write((json.dumps(MESSAGES[0]) + "\n").encode())
        await proc.stdin.drain()
        async with asyncio.timeout(scaled(60)):
            assert json.loads(await proc.stdout.readline())["id"] == 1
        proc.send_signal(signum)
        async with asyncio.timeout(scaled(10)):
            assert await proc.wait() == code
        assert "Traceback" not in (await proc.stderr.read()).decode()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_a_database_it_cannot_reach_is_one_line_on_stderr(stdio_env: dict[str, str], tmp_path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    no_server = {**stdio_env, "DATABASE_URL": "postgresql://fable:secret@127.0.0.1:1/fable"}
    unusable_dir = {k: v for k, v in stdio_env.items() if k != "DATABASE_URL"} | {"FABLE_DATA_DIR": str(not_a_dir)}
    for env, reason in ((no_server, "cannot connect to PostgreSQL at postgresql+asyncpg://fable:***@127.0.0.1:1/fable"),
                        (unusable_dir, f"cannot start the embedded PostgreSQL in {not_a_dir}")):
        code, stdout, stderr = await _run(env, messages=MESSAGES[:1])
        assert (code, stdout) == (1, "")
        assert reason in stderr and "Traceback" not in stderr and "secret" not in stderr
