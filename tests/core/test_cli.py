"""The ``fable`` command line against the test database.

One test runs the real executable in a subprocess (``python -m fable_web.cli``: entry point,
stdin, exit status); the others call ``fable_web.cli.main`` in a worker thread (it runs its own
event loop) with ``DATABASE_URL`` set, which exercises the same code without paying ~1 s of
imports per command.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from fable_core.caller import Caller
from fable_core.capabilities import load_capabilities
from fable_core.db.models import ApiKey, AppLog, Note, User
from fable_core.runtime import Fable
from fable_core.tools import REGISTRY
from fable_web.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cli_env(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = {"DATABASE_URL": database_url, "FABLE_DATA_DIR": str(tmp_path), "LLM_PROVIDER": "none"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


async def fable_cli(*argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``fable ARGV`` in-process; return (exit status, stdout, stderr)."""
    capsys.readouterr()
    status = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return status, out, err


async def count(fable: Fable, model: Any) -> int:
    async with fable.db.transaction() as s:
        return await s.scalar(select(func.count()).select_from(model)) or 0


async def test_user_apikey_and_call_through_the_real_executable(
    cli_env: dict[str, str], fable: Fable
) -> None:
    def fable_exe(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "fable_web.cli", *argv], input=stdin, capture_output=True,
            text=True, cwd=ROOT, env={**os.environ, **cli_env}, timeout=120, check=False,
        )

    made = await asyncio.to_thread(fable_exe, "user", "create", "carol", "--password-stdin",
                                   stdin="long enough password\n")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout) == {"id": 1, "username": "carol", "role": "admin"}

    bad = await asyncio.to_thread(fable_exe, "call", "create_note", "-", "--user", "carol",
                                  stdin='{"title": "From stdin",')
    assert bad.returncode == 1 and bad.stdout == ""
    assert bad.stderr.startswith("error: invalid_input: arguments are not valid JSON")
    assert await count(fable, Note) == 0


async def test_user_create_prints_the_user_and_the_first_is_admin(
    cli_env: dict[str, str], fable: Fable, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = await fable_cli("user", "create", "dora", "--no-password", capsys=capsys)
    assert status == 0 and json.loads(out) == {"id": 1, "username": "dora", "role": "admin"}
    status, out, _ = await fable_cli("user", "create", "eve", "--no-password", capsys=capsys)
    assert json.loads(out)["role"] == "user"

    status, out, err = await fable_cli("user", "create", "Dora", "--no-password", capsys=capsys)
    assert (status, out) == (1, "") and err.startswith("error: conflict: username 'Dora' is taken")
    assert await count(fable, User) == 2


async def test_apikey_create_prints_the_key_once_and_stores_only_its_hash(
    cli_env: dict[str, str], fable: Fable, alice: Caller, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = await fable_cli("apikey", "create", "--user", "alice", "--scope", "read",
                                       capsys=capsys)
    key = out.strip()
    assert status == 0 and key.startswith("fable_") and "shown once" in err
    async with fable.db.transaction() as s:
        row = await s.scalar(select(ApiKey))
    assert row is not None and row.user_id == alice.user_id and row.scope == "read"
    assert row.key_hash == hashlib.sha256(key.encode()).hexdigest()
    assert key not in {row.name, row.prefix, row.key_hash}
    assert key.split("_")[1] == row.prefix


async def test_tools_lists_the_whole_registry(
    cli_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    load_capabilities()
    status, out, _ = await fable_cli("tools", capsys=capsys)
    assert status == 0
    assert [line.split()[0] for line in out.splitlines()] == [t.name for t in REGISTRY]
    status, out, _ = await fable_cli("tools", "--json", capsys=capsys)
    listed = {t["name"]: t for t in json.loads(out)}
    assert set(listed) == {t.name for t in REGISTRY}
    assert listed["read_note"]["input_schema"] == REGISTRY.get("read_note").input_schema  # type: ignore[union-attr]


async def test_call_runs_a_tool_as_the_user_and_prints_json(
    cli_env: dict[str, str], fable: Fable, alice: Caller, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = await fable_cli(
        "call", "create_note", '{"title": "Call the plumber", "due_date": "2026-12-03"}',
        "--user", "alice", capsys=capsys)
    created = json.loads(out)
    assert status == 0 and created["title"] == "Call the plumber" and created["kind"] == "task"
    status, out, _ = await fable_cli("call", "read_note", json.dumps({"note_id": created["id"]}),
                                     "--user", "ALICE", capsys=capsys)
    assert status == 0 and json.loads(out)["id"] == created["id"]
    assert "null" not in out and "parent_id" not in json.loads(out)  # compact: no empty fields
    async with fable.db.transaction() as s:
        surfaces = (await s.scalars(select(AppLog.surface).where(AppLog.user_id == alice.user_id))).all()
    assert surfaces == ["cli", "cli"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ('{"title": ', "error: invalid_input: arguments are not valid JSON: Expecting value at line 1 column 11"),
        ('["title"]', "error: invalid_input: arguments must be a JSON object"),
        ('{"title": ""}', "error: invalid_input: invalid arguments for create_note: title:"),
        ('{"title": "x", "colour": "red"}', "error: invalid_input: invalid arguments for create_note: colour:"),
    ],
)
async def test_bad_arguments_exit_1_with_a_clear_error_and_write_nothing(
    cli_env: dict[str, str], fable: Fable, alice: Caller, capsys: pytest.CaptureFixture[str],
    arguments: str, message: str,
) -> None:
    status, out, err = await fable_cli("call", "create_note", arguments, "--user", "alice", capsys=capsys)
    assert (status, out) == (1, "")
    assert err.startswith(message)
    assert "Traceback" not in err
    assert await count(fable, Note) == 0


async def test_unknown_tool_and_unknown_user_are_clear_errors(
    cli_env: dict[str, str], fable: Fable, alice: Caller, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = await fable_cli("call", "make_coffee", "{}", "--user", "alice", capsys=capsys)
    assert status == 1 and err.startswith("error: unknown_tool: no tool named 'make_coffee'")
    status, _, err = await fable_cli("call", "create_note", '{"title": "x"}', "--user", "mallory",
                                     capsys=capsys)
    assert status == 1 and err.startswith("error: not_found: no user named 'mallory'")
    status, _, err = await fable_cli("apikey", "create", "--user", "mallory", capsys=capsys)
    assert status == 1 and err.startswith("error: not_found: no user named 'mallory'")
    assert await count(fable, Note) == 0 and await count(fable, ApiKey) == 0


async def test_usage_errors_exit_2(cli_env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        await fable_cli("call", "create_note", capsys=capsys)
    assert exited.value.code == 2
    assert "--user" in capsys.readouterr().err


async def test_operators_disable_and_enable_accounts(
    cli_env: dict[str, str], fable: Fable, alice: Caller, bob: Caller, capsys: pytest.CaptureFixture[str]
) -> None:
    """A disabled account's keys stop working at once (this process forgets them; others within
    seconds) and its sessions end; the last admin cannot be disabled."""
    from fable_core.accounts import create_api_key
    from fable_core.errors import Unauthenticated

    async with fable.db.transaction() as s:
        _, key = await create_api_key(s, bob.user_id, "agent")
    assert (await fable.keys.caller(key, "rest")).user_id == bob.user_id
    status, out, _ = await fable_cli("user", "disable", "bob", capsys=capsys)
    assert status == 0 and json.loads(out)["active"] is False
    fable.keys.forget()  # what the disabling process does in itself
    with pytest.raises(Unauthenticated):
        await fable.keys.caller(key, "rest")
    status, out, _ = await fable_cli("user", "list", capsys=capsys)
    assert [(u["username"], u["active"]) for u in map(json.loads, out.splitlines())] == [
        ("alice", True), ("bob", False)]
    status, _, err = await fable_cli("user", "disable", "alice", capsys=capsys)
    assert status == 1 and "last active admin" in err
    status, out, _ = await fable_cli("user", "enable", "bob", capsys=capsys)
    assert status == 0 and json.loads(out)["active"] is True
    assert (await fable.keys.caller(key, "rest")).user_id == bob.user_id
    status, _, err = await fable_cli("user", "disable", "nobody", capsys=capsys)
    assert status == 1 and "no user named 'nobody'" in err
