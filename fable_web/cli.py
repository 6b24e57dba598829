"""The ``fable`` command line: a surface of the registry like MCP and REST.

``fable call TOOL JSON --user U`` runs any registered tool through the same dispatcher, and
``fable tools`` lists them, so the CLI needs no code when a tool is added. Results go to stdout as
JSON; errors to stderr as ``error: <type>: <message>`` with exit status 1 (2 for usage errors).
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from fable_core.errors import FableError, InvalidInput
from fable_core.tools.compact import compact

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fable", description="Fable: your notes, tasks and projects, MCP-first.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="run the web app, REST API and MCP over HTTP")
    serve.add_argument("--host", default=None, help="address to bind (default FABLE_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port (default FABLE_PORT or 8000)")

    mcp = sub.add_parser("mcp", help="serve MCP over stdio (for Claude Desktop and other hosts)")
    mcp.add_argument("--user", help="act as this user (default: the only user)")
    mcp.add_argument("--remote", metavar="URL", help="forward to a remote Fable's /mcp instead")
    mcp.add_argument("--api-key-file", help="file holding the API key for --remote (else FABLE_API_KEY)")

    db = sub.add_parser("db", help="database maintenance")
    db_sub = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    db_sub.add_parser("upgrade", help="apply pending migrations (safe to re-run)")

    user = sub.add_parser("user", help="manage users")
    user_sub = user.add_subparsers(dest="user_command", required=True, metavar="ACTION")
    create = user_sub.add_parser("create", help="create a user (the first one is admin)")
    create.add_argument("username")
    create.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    create.add_argument("--no-password", action="store_true", help="no password (API keys / MCP only)")
    create.add_argument("--admin", action="store_true", help="make the user an admin")
    user_sub.add_parser("list", help="list every account (JSON lines)")
    disable = user_sub.add_parser("disable", help="disable an account: it cannot sign in, its sessions "
                                  "end and its API keys stop working; its data stays")
    disable.add_argument("username")
    enable = user_sub.add_parser("enable", help="enable a disabled account again")
    enable.add_argument("username")

    apikey = sub.add_parser("apikey", help="manage API keys")
    apikey_sub = apikey.add_subparsers(dest="apikey_command", required=True, metavar="ACTION")
    key = apikey_sub.add_parser("create", help="create an API key and print it once")
    key.add_argument("--user", required=True)
    key.add_argument("--name", default="cli")
    key.add_argument("--scope", choices=("read", "write"), default="write")

    tools = sub.add_parser("tools", help="list the registered tools")
    tools.add_argument("--json", action="store_true", help="full schemas as JSON")

    call = sub.add_parser("call", help="run a tool and print its JSON result")
    call.add_argument("tool")
    call.add_argument("arguments", nargs="?", default="{}", help="JSON object, or - for stdin")
    call.add_argument("--user", required=True)
    return p


def _run(coro: Awaitable[int | None]) -> int | None:
    """Run on uvloop where it is installed (the servers' throughput depends on it)."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency except on Windows
        return asyncio.run(coro)  # type: ignore[arg-type]
    return uvloop.run(coro)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    handler = _HANDLERS[args.command]
    _exit_cleanly_on_sigterm()
    try:
        return _run(handler(args)) or 0
    except FableError as e:
        print(f"error: {e.type}: {e.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _exit_cleanly_on_sigterm() -> None:
    """Make SIGTERM (how hosts and service managers stop ``fable mcp`` and ``fable serve``) exit
    like Ctrl-C: by unwinding, so exit handlers run and the embedded PostgreSQL is released by
    its last user. Python's default would end the process on the spot. Servers that install
    their own handler (uvicorn) replace this one while they run."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_system_exit)


def _raise_system_exit(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


async def _with_fable(fn: Callable[[Any], Awaitable[int | None]]) -> int | None:
    from fable_core.runtime import Fable

    fable = await Fable.open()
    try:
        return await fn(fable)
    finally:
        await fable.close()


async def _serve(args: argparse.Namespace) -> int | None:
    from fable_web.server import serve

    return await serve(host=args.host, port=args.port)


async def _mcp(args: argparse.Namespace) -> int | None:
    if args.remote:
        from fable_mcp.bridge import run_bridge

        return await run_bridge(args.remote, api_key_file=args.api_key_file)
    from fable_mcp.stdio import run_stdio

    return await run_stdio(username=args.user)


async def _db(args: argparse.Namespace) -> int | None:
    from fable_core.config import load_settings
    from fable_core.db.database import Database

    db = await Database.open(load_settings(), migrate=True)
    await db.close()
    print("database is up to date", file=sys.stderr)
    return 0


async def _user(args: argparse.Namespace) -> int | None:
    if args.user_command == "create":
        return await _user_create(args)
    return await _with_fable(lambda fable: _user_admin(fable, args))


async def _user_create(args: argparse.Namespace) -> int | None:
    from fable_core.accounts import create_user

    password: str | None = None
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    elif not args.no_password:
        password = getpass.getpass("password: ")

    async def run(fable: Any) -> int:
        async with fable.db.transaction() as session:
            user = await create_user(session, args.username, password,
                                     role="admin" if args.admin else None)
        print(json.dumps({"id": user.id, "username": user.username, "role": user.role}))
        return 0

    return await _with_fable(run)


async def _user_admin(fable: Any, args: argparse.Namespace) -> int:
    from fable_core.accounts import list_users, set_active

    async with fable.db.transaction() as session:
        if args.user_command == "list":
            users = await list_users(session)
        else:
            users = [await set_active(session, args.username, args.user_command == "enable")]
    for user in users:
        print(json.dumps({"id": user.id, "username": user.username, "role": user.role, "email": user.email,
                          "active": user.is_active}))
    return 0


async def _apikey(args: argparse.Namespace) -> int | None:
    from fable_core.accounts import create_api_key, find_user

    async def run(fable: Any) -> int:
        async with fable.db.transaction() as session:
            user = await find_user(session, args.user)
            row, key = await create_api_key(session, user.id, args.name, args.scope)
        print(key)
        print(f"key {row.prefix} ({row.scope}) for {user.username}: shown once, store it now",
              file=sys.stderr)
        return 0

    return await _with_fable(run)


async def _tools(args: argparse.Namespace) -> int | None:
    from fable_core.capabilities import load_capabilities
    from fable_core.tools import REGISTRY

    load_capabilities()
    if args.json:
        print(json.dumps([
            {"name": t.name, "title": t.title, "description": t.description, "scope": t.scope,
             "input_schema": t.input_schema, "output_schema": t.output_schema}
            for t in REGISTRY
        ], indent=2))
        return 0
    width = max(len(t.name) for t in REGISTRY)
    for t in REGISTRY:
        print(f"{t.name:<{width}}  {t.scope:<5}  {t.description.splitlines()[0]}")
    return 0


async def _call(args: argparse.Namespace) -> int | None:
    from fable_core.accounts import find_user
    from fable_core.caller import Caller

    raw = sys.stdin.read() if args.arguments == "-" else args.arguments
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError as e:
        raise InvalidInput(f"arguments are not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from e
    if not isinstance(arguments, dict):
        raise InvalidInput("arguments must be a JSON object, e.g. '{\"title\": \"Groceries\"}'")

    async def run(fable: Any) -> int:
        fable.dispatcher.tool(args.tool)  # unknown tool: fail before touching users
        async with fable.db.transaction() as session:
            user = await find_user(session, args.user)
        caller = Caller(user_id=user.id, username=user.username, role=user.role, surface="cli")
        result = await fable.call(args.tool, arguments, caller)
        print(json.dumps(compact(result), indent=2, ensure_ascii=False))
        return 0

    return await _with_fable(run)


_HANDLERS: dict[str, Callable[[argparse.Namespace], Awaitable[int | None]]] = {
    "serve": _serve,
    "mcp": _mcp,
    "db": _db,
    "user": _user,
    "apikey": _apikey,
    "tools": _tools,
    "call": _call,
}

if __name__ == "__main__":
    raise SystemExit(main())
