"""The ``fable`` command line against the test database.

One test runs the real executable in a subprocess (``python -m fable_web.cli``: entry point,
stdin, exit status); the others call ``fable_web.cli.main`` in a worker thread (it runs its own
event loop) with ``DATABASE_URL`` set, which exercises the same code without paying ~1 s of
imports per command.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from support.cli import fable_cli
from support.pace import scaled
from support.users import PASSWORD

from fable_core.capabilities import load_capabilities
from fable_core.db.models import ApiKey, AppLog, LoginSession, Note, User
from fable_core.errors import Unauthenticated
from fable_core.identity import login_sessions
from fable_core.identity.accounts import authenticate, create_api_key
from fable_core.runtime import Fable
from fable_core.tools import REGISTRY
from fable_core.tools.caller import Caller
from fable_web.cli import _parser

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cli_env(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = {"DATABASE_URL": database_url, "FABLE_DATA_DIR": str(tmp_path), "LLM_PROVIDER": "none"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


async def count(fable: Fable, model: Any) -> int:
    async with fable.db.transaction() as s:
        return await s.scalar(select(func.count()).select_from(model)) or 0


async def test_user_apikey_and_call_through_the_real_executable(
    cli_env: dict[str, str], fable: Fable
) -> None:
    def fable_exe(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "fable_web.cli", *argv], input=stdin, capture_output=True,
            text=True, cwd=ROOT, env={**os.environ, **cli_env}, timeout=scaled(120), check=False,
        )

    no_terminal = await asyncio.to_thread(fable_exe, "user", "create", "carol")  # stdin is a pipe
    assert no_terminal.returncode == 1 and no_terminal.stdout == ""
    assert no_terminal.stderr.splitlines() == [
        "error: invalid_input: no terminal to ask for the password: pipe it in with --password-stdin "
        "(printf '%s\\n' \"$PASSWORD\" | fable user create carol --password-stdin), or create it with --no-password"]
    assert await count(fable, User) == 0

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
    assert [line.split()[:3] for line in out.splitlines()] == [[t.name, t.scope, t.group] for t in REGISTRY]
    status, out, _ = await fable_cli("tools", "--json", capsys=capsys)
    listed = {t["name"]: t for t in json.loads(out)}
    assert set(listed) == {t.name for t in REGISTRY}
    assert listed["read_note"]["input_schema"] == REGISTRY.get("read_note").input_schema  # type: ignore[union-attr]
    assert listed["read_note"]["toolset"] == "notes" and listed["list_events"]["toolset"] == "calendar"
    assert listed["start_chat"]["followed_by"] == "follow_answer" and "followed_by" not in listed["read_note"]


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
        await fable_cli("call", capsys=capsys)
    assert exited.value.code == 2
    assert "the following arguments are required: tool" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        await fable_cli("user", "create", "x", "--password-stdin", "--no-password", capsys=capsys)
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


async def test_operators_disable_and_enable_accounts(
    cli_env: dict[str, str], fable: Fable, alice: Caller, bob: Caller, capsys: pytest.CaptureFixture[str]
) -> None:
    """A disabled account's keys stop working at once (this process forgets them; others within
    seconds) and its sessions end; the last admin cannot be disabled."""
    from fable_core.errors import Unauthenticated
    from fable_core.identity.accounts import create_api_key

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


def _every_parser(parser: argparse.ArgumentParser, path: str = "fable") -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found += _every_parser(child, f"{path} {name}")
    return found


def test_every_command_and_option_says_what_it_does_and_its_default() -> None:
    """``--help`` is the operator's manual: every command has a summary, every argument a help
    line, and every option that takes a value names what happens without it."""
    missing = []
    for path, parser in _every_parser(_parser()):
        if path != "fable" and not parser.description:
            missing.append(f"{path}: no description")
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            name = f"{path} {'/'.join(action.option_strings) or action.dest}"
            takes_a_value = action.nargs != 0 if action.option_strings else action.default is not None
            if not action.help:
                missing.append(f"{name}: no help")
            elif takes_a_value and "default" not in action.help:
                missing.append(f"{name}: no default in {action.help!r}")
    assert missing == []


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 37 item 11: ``fable --version`` says which Fable this is, touching no database."""
    from importlib.metadata import version

    with pytest.raises(SystemExit) as ended:
        _parser().parse_args(["--version"])
    assert ended.value.code == 0
    assert capsys.readouterr().out.strip() == f"fable {version('fable')}"


def stdin_of(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))


async def test_passwd_sets_a_new_password_and_ends_every_session(
    cli_env: dict[str, str], fable: Fable, alice: Caller, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with fable.db.transaction() as s:
        await login_sessions.start_session(s, alice.user_id)
    stdin_of(monkeypatch, "short\n")
    status, out, err = await fable_cli("user", "passwd", "alice", "--password-stdin", capsys=capsys)
    assert (status, out) == (1, "") and err.startswith("error: invalid_input: password must be at least 8")
    assert await count(fable, LoginSession) == 1  # refused: nothing changed

    stdin_of(monkeypatch, "")  # a pipe with nothing in it is no terminal either
    status, _, err = await fable_cli("user", "passwd", "alice", capsys=capsys)
    assert status == 1 and "pipe it in with --password-stdin" in err and "--no-password" not in err

    stdin_of(monkeypatch, "the operator's new password\n")
    status, out, err = await fable_cli("user", "passwd", "alice", "--password-stdin", capsys=capsys)
    assert status == 0 and json.loads(out)["username"] == "alice" and "every session" in err
    assert await count(fable, LoginSession) == 0
    assert (await authenticate(fable.db, "alice", "the operator's new password")).id == alice.user_id
    with pytest.raises(Unauthenticated):
        await authenticate(fable.db, "alice", PASSWORD)
    stdin_of(monkeypatch, "the operator's new password\n")
    status, _, err = await fable_cli("user", "passwd", "nobody", "--password-stdin", capsys=capsys)
    assert status == 1 and err.startswith("error: not_found: no user named 'nobody'")


async def test_delete_removes_the_account_with_what_it_owns_and_nothing_else(
    cli_env: dict[str, str], fable: Fable, alice: Caller, bob: Caller, call, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await call("create_note", title="Alice's", as_=alice)
    await call("create_note", title="Bob's", as_=bob)
    await call("create_note", title="Bob's task", status="todo", as_=bob)
    await call("create_project", title="Bob's project", as_=bob)
    async with fable.db.transaction() as s:
        _, key = await create_api_key(s, bob.user_id, "agent")

    stdin_of(monkeypatch, "")
    status, out, err = await fable_cli("user", "delete", "bob", capsys=capsys)  # no terminal to confirm on
    assert (status, out) == (1, "") and "needs --yes" in err
    status, _, err = await fable_cli("user", "delete", "alice", "--yes", capsys=capsys)
    assert status == 1 and "'alice' is the last active admin" in err
    assert await count(fable, User) == 2 and await count(fable, Note) == 3

    status, out, _ = await fable_cli("user", "delete", "bob", "--yes", capsys=capsys)
    assert status == 0
    assert json.loads(out) == {"id": bob.user_id, "username": "bob", "deleted": True, "notes": 2, "projects": 1,
                               "shares_given": 0, "shares_received": 0}
    assert [n["title"] for n in (await call("list_notes", as_=alice))["items"]] == ["Alice's"]
    assert await count(fable, User) == 1 and await count(fable, Note) == 1 and await count(fable, ApiKey) == 0
    with pytest.raises(Unauthenticated):
        await fable.keys.caller(key, "rest")
    status, _, err = await fable_cli("user", "delete", "bob", "--yes", capsys=capsys)
    assert status == 1 and err.startswith("error: not_found: no user named 'bob'")


async def test_apikey_list_shows_every_key_but_never_the_key_and_revoke_ends_it(
    cli_env: dict[str, str], fable: Fable, alice: Caller, bob: Caller, capsys: pytest.CaptureFixture[str],
) -> None:
    async with fable.db.transaction() as s:
        alice_row, alice_key = await create_api_key(s, alice.user_id, "laptop")
        bob_row, bob_key = await create_api_key(s, bob.user_id, "agent", "read")
    status, out, _ = await fable_cli("apikey", "list", capsys=capsys)
    listed = [json.loads(line) for line in out.splitlines()]
    assert status == 0
    assert [(k["id"], k["user"], k["name"], k["scope"]) for k in listed] == [
        (alice_row.id, "alice", "laptop", "write"), (bob_row.id, "bob", "agent", "read")]
    assert alice_key not in out and bob_key not in out and alice_row.key_hash not in out
    status, out, _ = await fable_cli("apikey", "list", "--user", "BOB", capsys=capsys)
    assert [json.loads(line)["id"] for line in out.splitlines()] == [bob_row.id]

    status, out, _ = await fable_cli("apikey", "revoke", str(bob_row.id), capsys=capsys)
    assert status == 0 and json.loads(out) == {"id": bob_row.id, "name": "agent", "prefix": bob_row.prefix,
                                               "user": "bob", "revoked": True}
    with pytest.raises(Unauthenticated):
        await fable.keys.caller(bob_key, "rest")
    assert (await fable.keys.caller(alice_key, "rest")).user_id == alice.user_id
    status, out, err = await fable_cli("apikey", "revoke", str(bob_row.id), capsys=capsys)
    assert (status, out) == (1, "") and err.startswith(f"error: not_found: API key {bob_row.id} not found")
    assert await count(fable, ApiKey) == 1


async def test_call_and_apikey_create_need_no_user_when_there_is_one(
    cli_env: dict[str, str], fable: Fable, capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, err = await fable_cli("call", "list_notes", capsys=capsys)
    assert status == 1 and err.startswith("error: not_found: this Fable has no users yet: create one with "
                                          "`fable user create NAME`")
    await fable_cli("user", "create", "solo", "--no-password", capsys=capsys)
    status, out, _ = await fable_cli("call", "create_note", '{"title": "Mine"}', capsys=capsys)
    assert status == 0 and json.loads(out)["title"] == "Mine"
    status, out, _ = await fable_cli("apikey", "create", capsys=capsys)
    assert status == 0 and (await fable.keys.caller(out.strip(), "rest")).username == "solo"

    await fable_cli("user", "create", "duo", "--no-password", capsys=capsys)
    status, out, err = await fable_cli("call", "create_note", '{"title": "Whose?"}', capsys=capsys)
    assert (status, out) == (1, "") and err.startswith("error: invalid_input: this Fable has 2 users: pass --user NAME")
    status, _, err = await fable_cli("apikey", "create", capsys=capsys)
    assert status == 1 and "pass --user NAME" in err
    assert await count(fable, Note) == 1 and await count(fable, ApiKey) == 1


async def test_operators_change_roles_and_every_user_command_is_audited(
    cli_env: dict[str, str], fable: Fable, alice: Caller, bob: Caller, capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, err = await fable_cli("user", "role", "alice", "user", capsys=capsys)
    assert status == 1 and "'alice' is the last active admin" in err
    status, out, _ = await fable_cli("user", "role", "bob", "admin", capsys=capsys)
    assert status == 0 and json.loads(out)["role"] == "admin"
    status, out, _ = await fable_cli("user", "role", "alice", "user", capsys=capsys)
    assert status == 0 and json.loads(out)["role"] == "user"
    assert (await fable_cli("user", "disable", "alice", capsys=capsys))[0] == 0
    assert (await fable_cli("apikey", "create", "--user", "bob", "--name", "laptop", capsys=capsys))[0] == 0
    status, out, _ = await fable_cli("user", "list", capsys=capsys)
    listed = {u["username"]: u for u in map(json.loads, out.splitlines())}
    assert (listed["alice"]["role"], listed["alice"]["active"], listed["alice"]["notes"]) == ("user", False, 0)
    with pytest.raises(SystemExit):
        _parser().parse_args(["user", "role", "bob", "owner"])
    async with fable.db.reading() as s:
        rows = (await s.execute(select(AppLog.action, AppLog.username, AppLog.surface, AppLog.user_id)
                                .where(AppLog.category == "audit").order_by(AppLog.id))).all()
    assert [r.action for r in rows] == ["user.role", "user.role", "user.disable", "apikey.create"]
    assert {(r.username.startswith("cli:"), r.surface, r.user_id) for r in rows} == {(True, "cli", None)}


async def test_operator_commands_run_the_tools_with_their_usage_and_audit_rows(
    cli_env: dict[str, str], fable: Fable, alice: Caller, bob: Caller, capsys: pytest.CaptureFixture[str],
) -> None:
    """``fable user disable|enable|role|list|delete`` run the admin page's tools as the operator:
    the same checks and one audit row per change, and one usage row per command, as any call."""
    assert (await fable_cli("user", "disable", "bob", capsys=capsys))[0] == 0
    assert (await fable_cli("user", "list", capsys=capsys))[0] == 0
    status, _, err = await fable_cli("user", "delete", "alice", "--yes", capsys=capsys)
    assert status == 1 and "last active admin" in err  # the tool's rule, refused as on the admin page
    async with fable.db.reading() as s:
        rows = (await s.execute(select(AppLog.category, AppLog.action, AppLog.username, AppLog.surface,
                                       AppLog.user_id, AppLog.error_type)
                                .where(AppLog.surface == "cli").order_by(AppLog.id))).all()
    assert [(r.category, r.action, r.error_type) for r in rows] == [
        ("audit", "user.disable", None), ("usage", "update_user", None), ("usage", "list_users", None),
        ("usage", "delete_user", "invalid_input")]
    assert {(r.username.startswith("cli:"), r.user_id) for r in rows} == {(True, None)}


async def test_serve_refuses_a_bad_toolsets_setting_before_it_says_it_serves(cli_env: dict[str, str]) -> None:
    """Issue 37 item 11: an unknown FABLE_MCP_TOOLSETS entry printed "serving on …", then failed."""
    import asyncio
    import os

    from support.servers import FABLE, free_port

    proc = await asyncio.create_subprocess_exec(
        FABLE, "serve", "--port", str(free_port()), env={**os.environ, **cli_env, "FABLE_MCP_TOOLSETS": "notes,bogus"},
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    async with asyncio.timeout(scaled(60)):
        out, err = await proc.communicate()
    said = (out + err).decode()
    assert proc.returncode == 1, said
    assert "FABLE_MCP_TOOLSETS: unknown bogus" in said and "serving on" not in said and "Traceback" not in said
