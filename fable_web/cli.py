"""The ``fable`` command line: a surface of the registry like MCP and REST.

``fable call TOOL JSON --user U`` runs any registered tool through the same dispatcher
(:mod:`fable_web.calls`: a stream tool's progress on stderr, and the work a tool starts waited
for), and ``fable tools`` lists them, so the CLI needs no code when a tool is added. Results go to
stdout as JSON (a binary result, an image, as its bytes: ``--output FILE``, else stdout;
``--input FILE`` gives a tool's binary argument); errors to stderr as ``error: <type>: <message>``
with exit status 1 (2 for usage errors).
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
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from fable_core.errors import FableError, InvalidInput

__all__ = ["main"]


def _command(sub: Any, name: str, what: str) -> argparse.ArgumentParser:
    """A subcommand whose one-line summary is both its line in the parent's help and its own."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=what, description=what)
    return parser


def _version() -> str:
    try:
        return version("fable")
    except PackageNotFoundError:  # a source tree that is not installed
        return "(not installed)"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fable", description="Fable: your notes, tasks and projects, MCP-first.",
        epilog="Settings come from the environment (docs/configuration.md): FABLE_DATA_DIR, DATABASE_URL, ...")
    p.add_argument("--version", action="version", version=f"fable {_version()}", help="print the version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = _command(sub, "serve", "run the web app, REST API and MCP over HTTP")
    serve.add_argument("--host", default=None, help="address to listen on (default: FABLE_HOST, else 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port to listen on (default: FABLE_PORT, else 8000)")

    mcp = _command(sub, "mcp", "serve MCP over stdio (for Claude Desktop and other hosts)")
    mcp.add_argument("--user", help="act as this user (default: the only user; on an empty database, a first "
                     "user named after you is created)")
    mcp.add_argument("--remote", metavar="URL", help="forward to a remote Fable's /mcp instead of opening a "
                     "database here (default: off)")
    mcp.add_argument("--api-key-file", metavar="PATH", help="file holding the API key for --remote "
                     "(default: the FABLE_API_KEY variable)")
    mcp.add_argument("--toolsets", metavar="A,B", help="the tools offered: default, toolsets (notes, calendar, "
                     "...; `fable tools` lists them), tool names or all, comma-separated (default: "
                     "FABLE_MCP_TOOLSETS, else default); clients enable more with enable_toolset")
    mcp.add_argument("--print-config", action="store_true", help="print the Claude Desktop config that starts "
                     "this command (the absolute path of this fable, these options, the data directory and the "
                     "Fable settings set here) and exit")

    db = _command(sub, "db", "database maintenance")
    db_sub = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    _command(db_sub, "upgrade", "apply pending migrations and say which (safe to re-run)")
    _command(db_sub, "check", "run the vector extension's self-test again, forgetting earlier verdicts (after "
             "moving the database to another CPU or upgrading pgvector), and say whether search by meaning is on")

    user = _command(sub, "user", "manage accounts")
    user_sub = user.add_subparsers(dest="user_command", required=True, metavar="ACTION")
    create = _command(user_sub, "create", "create an account (the first one is the admin)")
    create.add_argument("username", help="its name: 2-64 letters, digits, '.', '_' or '-'")
    _password_options(create, allow_none=True)
    create.add_argument("--admin", action="store_true", help="make it an admin (default: only the first "
                        "account is)")
    _command(user_sub, "list", "list every account, one JSON object a line (with its last sign-in, notes "
             "and their storage in bytes)")
    for action, what in (("disable", "disable an account: it cannot sign in, its sessions end and its API keys "
                          "stop working; its data stays"), ("enable", "enable a disabled account again")):
        _command(user_sub, action, what).add_argument("username", help=f"the account to {action}")
    role = _command(user_sub, "role", "make an account an admin or a user (the last active admin stays one)")
    role.add_argument("username", help="the account")
    role.add_argument("role", choices=("admin", "user"), help="its new role")
    passwd = _command(user_sub, "passwd", "set an account's password: every session of it ends")
    passwd.add_argument("username", help="the account")
    _password_options(passwd, allow_none=False)
    delete = _command(user_sub, "delete", "delete an account and everything it owns (the shares of its "
                      "projects and notes end with them, and so do shares made to it)")
    delete.add_argument("username", help="the account to delete")
    delete.add_argument("--yes", action="store_true", help="do not ask (required without a terminal)")

    apikey = _command(sub, "apikey", "manage API keys")
    apikey_sub = apikey.add_subparsers(dest="apikey_command", required=True, metavar="ACTION")
    key = _command(apikey_sub, "create", "create an API key and print it once")
    key.add_argument("--user", help="whose key (default: the only user)")
    key.add_argument("--name", default="cli", help="a name to recognise it by (default: %(default)s)")
    key.add_argument("--scope", choices=("read", "write"), default="write",
                     help="read: only the read-only tools; write: everything (default: %(default)s)")
    keys = _command(apikey_sub, "list", "list API keys, one JSON object a line (never the keys themselves)")
    keys.add_argument("--user", help="only this user's keys (default: every account's)")
    revoke = _command(apikey_sub, "revoke", "revoke an API key: clients using it are refused within 2 s")
    revoke.add_argument("key_id", type=int, metavar="ID", help="the key's id, from `fable apikey list`")

    backup = _command(sub, "backup", "write a backup of the whole instance (a ZIP archive; docs/backup.md)")
    backup.add_argument("--output", metavar="FILE", type=Path, help="where the archive goes (default: stdout)")
    backup.add_argument("--embeddings", action="store_true", help="include embeddings (default: recomputed "
                        "after a restore)")
    restore = _command(sub, "restore", "restore a backup, all or nothing, with fresh ids (into an instance in use "
                       "too: accounts of the same name receive their archived data, the instance's own settings "
                       "stay)")
    restore.add_argument("file", type=Path, metavar="FILE", help="an archive from `fable backup` or backup_mine")

    tools = _command(sub, "tools", "list the registered tools")
    tools.add_argument("--json", action="store_true", help="print every tool with its full schemas as JSON")

    call = _command(sub, "call", "run a tool and print its JSON result (waiting for the work it starts)")
    call.add_argument("tool", help="the tool's name (see `fable tools`)")
    call.add_argument("arguments", nargs="?", default="{}",
                      help="its arguments as a JSON object, or - to read them from stdin (default: %(default)s)")
    call.add_argument("--user", help="act as this user (default: the only user)")
    call.add_argument("--input", metavar="FILE", type=Path,
                      help="a file whose bytes are the tool's binary argument, upload_image's content; a folder "
                           "is sent as a ZIP of its files, import_vault's vault (default: none)")
    call.add_argument("--output", metavar="FILE", type=Path,
                      help="where a binary result (get_image's image) goes (default: stdout)")
    call.add_argument("--no-wait", action="store_true",
                      help="do not wait for the work a tool starts (start_chat's answer, a research run). That work "
                           "runs in this command's process and would end with it, so such a tool is refused before "
                           "anything starts; other tools start no work and run as without it (default: wait for "
                           "the work, its progress on stderr; Ctrl-C stops it)")
    return p


def _password_options(parser: argparse.ArgumentParser, *, allow_none: bool) -> None:
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--password-stdin", action="store_true",
                     help="read the password from the first line of stdin (default: ask on the terminal)")
    if allow_none:
        how.add_argument("--no-password", action="store_true",
                         help="no password: the account works only with API keys and a local `fable mcp`")


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
    toolsets = None if args.toolsets is None else [part.strip() for part in args.toolsets.split(",") if part.strip()]
    if toolsets is not None and args.remote:
        raise InvalidInput("--toolsets is for a local database; with --remote, the API key's toolsets decide "
                           "(Settings → API keys)")
    if toolsets is not None:  # refused before any database is opened
        toolsets = _checked_toolsets(toolsets)
    if args.print_config:
        user = args.user or (None if args.remote else await _only_account())
        return _print_mcp_config(args, toolsets, user)
    if args.remote:
        from fable_mcp.bridge import run_bridge

        return await run_bridge(args.remote, api_key_file=args.api_key_file)
    from fable_mcp.stdio import run_stdio

    return await run_stdio(username=args.user, toolsets=toolsets)


def _checked_toolsets(toolsets: list[str]) -> list[str]:
    from fable_core.capabilities import load_capabilities
    from fable_core.tools import REGISTRY
    from fable_core.tools.toolsets import check_toolsets

    load_capabilities()
    return check_toolsets(REGISTRY, toolsets, source="--toolsets")


def _print_mcp_config(args: argparse.Namespace, toolsets: list[str] | None, user: str | None) -> int:
    import os

    from fable_core.config import load_settings
    from fable_core.identity.client_configs import local_env, stdio_config

    if args.remote:
        argv = ["mcp", "--remote", args.remote]
        if args.api_key_file:
            argv += ["--api-key-file", str(Path(args.api_key_file).resolve())]
        key = os.environ.get("FABLE_API_KEY")
        env = {"FABLE_API_KEY": key} if key and not args.api_key_file else {}
    else:
        argv = ["mcp", *(["--user", user] if user else [])]
        if toolsets is not None:
            argv += ["--toolsets", ",".join(toolsets)]
        env = local_env(load_settings())
    print(json.dumps(stdio_config(argv, env), indent=2))
    return 0


async def _only_account() -> str | None:
    """The one account a local config without ``--user`` is for; None on an empty instance (the
    server makes its first account); InvalidInput naming them when there are several (a config
    that named none would fail at its first start)."""
    from fable_core.config import load_settings
    from fable_core.db.database import Database
    from fable_core.identity.accounts import account_names

    db = await Database.open(load_settings(), migrate=False, check=False)
    try:
        async with db.reading() as s:
            names = await account_names(s, 11)
    finally:
        await db.close()
    if len(names) > 1:
        shown = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
        raise InvalidInput(f"this instance has several accounts ({shown}): say whose config this is with "
                           "--user NAME", field="user")
    return names[0] if names else None


async def _db(args: argparse.Namespace) -> int | None:
    from fable_core.config import load_settings
    from fable_core.db.database import Database
    from fable_core.db.vectors import forget_verdicts

    db = await Database.open(load_settings(), migrate=False, check=False)
    try:
        if args.db_command == "check":
            await forget_verdicts(db.url)
        vectors = await db.check_vectors()
        applied = await db.upgrade()
        head = await db.revision()
    finally:
        await db.close()
    for migration in applied:
        print(f"applied {migration.revision}: {migration.description}", file=sys.stderr)
    print(f"database is up to date at revision {head}" + ("" if applied else " (nothing to apply)"),
          file=sys.stderr)
    print("search by meaning: " + ("on (the vector extension passed its self-test)" if vectors.on
                                   else f"off: {vectors.reason}"), file=sys.stderr)
    return 0


_NO_TERMINAL = ("no terminal to ask for the password: pipe it in with --password-stdin "
                "(printf '%s\\n' \"$PASSWORD\" | fable user {action} {username} --password-stdin){or_none}")


def _local_auth_required() -> None:
    from fable_core.config import load_settings

    if not load_settings().local_auth_enabled:
        raise InvalidInput("passwords are turned off on this instance (LOCAL_AUTH_ENABLED=false): accounts "
                           "sign in with OIDC; create one with --no-password", field="password")


def _read_password(args: argparse.Namespace) -> str:
    """The password from stdin (``--password-stdin``) or asked twice on the terminal, checked
    before anything is opened; without a terminal to ask on, a one-line error saying how to pass it."""
    from fable_core.identity.passwords import check_password

    if args.password_stdin:
        password = sys.stdin.readline().removesuffix("\n").removesuffix("\r")
    elif not sys.stdin.isatty():
        or_none = ", or create it with --no-password" if args.user_command == "create" else ""
        raise InvalidInput(_NO_TERMINAL.format(action=args.user_command, username=args.username, or_none=or_none),
                           field="password")
    else:
        try:
            password = getpass.getpass("password: ")
            again = getpass.getpass("password again: ")
        except EOFError:
            raise InvalidInput("no password given; nothing was changed", field="password") from None
        if password != again:
            raise InvalidInput("the two passwords differ; nothing was changed", field="password")
    check_password(password)
    return password


def _confirm_deletion(args: argparse.Namespace, what: str) -> None:
    if not sys.stdin.isatty():
        raise InvalidInput(f"deleting {args.username!r} needs --yes when there is no terminal to ask on",
                           field="yes")
    print(f"This deletes {what}. Type the account's name to confirm: ", end="", file=sys.stderr, flush=True)
    if sys.stdin.readline().strip() != args.username:
        raise InvalidInput(f"not confirmed; {args.username!r} was not deleted", field="yes")


def _account_line(account: Any) -> str:
    """An account (a ``User`` row or a tool's account view) as one line of JSON."""
    return json.dumps({"id": account.id, "username": account.username, "role": account.role, "email": account.email,
                       "active": account.is_active})


async def _as_operator(fable: Any, name: str, arguments: dict[str, Any]) -> Any:
    """Run tool ``name`` as the operator at this shell, through the dispatcher: the checks,
    the audit and the usage row of the same call made from the admin page."""
    from fable_core.admin.audit import operator_name
    from fable_core.tools.caller import Caller

    return await fable.dispatcher.run(name, arguments, Caller.at_shell(operator_name()))


async def _account_id(fable: Any, username: str) -> int:
    from fable_core.identity.accounts import find_user

    async with fable.db.reading() as session:
        return int((await find_user(session, username)).id)


async def _user(args: argparse.Namespace) -> int | None:
    from fable_core.admin.audit import Actor
    from fable_core.identity import users as admin
    from fable_core.identity.passwords import hashed

    password: str | None = None
    if args.user_command == "passwd" or (args.user_command == "create" and not args.no_password):
        _local_auth_required()
        password = _read_password(args)

    async def run(fable: Any) -> int:
        if args.user_command == "delete":
            return await _user_delete(fable, args)
        if args.user_command == "list":
            for account in (await _as_operator(fable, "list_users", {})).items:
                line = account.model_dump(mode="json")
                line["active"] = line.pop("is_active")
                print(json.dumps(line))
            return 0
        if args.user_command in ("role", "disable", "enable"):
            change: dict[str, Any] = ({"role": args.role} if args.user_command == "role"
                                      else {"is_active": args.user_command == "enable"})
            change["user_id"] = await _account_id(fable, args.username)
            account = await _as_operator(fable, "update_user", change)
            print(_account_line(account))
            return 0
        # no tool: an operator's own powers (a new account, a password set without the old one)
        new = await hashed(password) if password is not None else None  # before the transaction opens
        async with fable.db.transaction() as session:
            if args.user_command == "create":
                user = await admin.create_account(session, Actor.operator(), args.username, new,
                                                  role="admin" if args.admin else None)
                print(json.dumps({"id": user.id, "username": user.username, "role": user.role}))
                return 0
            assert new is not None
            user = await admin.set_account_password(session, Actor.operator(), args.username, new)
        print(_account_line(user))
        print(f"password changed; every session of {user.username!r} ended", file=sys.stderr)
        return 0

    return await _with_fable(run)


async def _user_delete(fable: Any, args: argparse.Namespace) -> int:
    from fable_core.identity import accounts

    if not args.yes:
        async with fable.db.reading() as session:
            user = await accounts.find_user(session, args.username)
            owned = await accounts.count_owned(session, user)
        shares = owned["shares_given"] + owned["shares_received"]
        await asyncio.to_thread(_confirm_deletion, args, f"the account {user.username!r} with its {owned['notes']} "
                                f"notes and tasks, {owned['projects']} projects, conversations and API keys, "
                                f"and ends {shares} shares to and from it")
    deleted = await _as_operator(fable, "delete_user", {"user_id": await _account_id(fable, args.username)})
    print(json.dumps(deleted.model_dump(mode="json")))
    return 0


async def _apikey(args: argparse.Namespace) -> int | None:
    from fable_core.admin.audit import Actor
    from fable_core.identity import accounts
    from fable_core.identity import users as admin

    async def run(fable: Any) -> int:
        async with fable.db.transaction() as session:
            if args.apikey_command == "create":
                user = await _chosen_user(session, args.user)
                row, key = await admin.issue_api_key(session, Actor.operator(), user, args.name, args.scope)
                print(key)
                print(f"key {row.prefix} ({row.scope}) for {user.username}: shown once, store it now",
                      file=sys.stderr)
                return 0
            if args.apikey_command == "list":
                if args.user:
                    user = await accounts.find_user(session, args.user)
                    keys = [(row, user.username) for row in await accounts.list_api_keys(session, user.id)]
                else:
                    keys = await accounts.list_every_api_key(session)
                for row, username in keys:
                    print(json.dumps(accounts.api_key_view(row) | {"user": username}))
                return 0
            row, username = await admin.revoke_api_key(session, Actor.operator(), args.key_id)
        print(json.dumps({"id": row.id, "name": row.name, "prefix": row.prefix, "user": username, "revoked": True}))
        return 0

    return await _with_fable(run)


async def _chosen_user(session: Any, username: str | None) -> Any:
    """``--user NAME``, or the only user when it is not given."""
    from fable_core.identity.accounts import find_user, sole_user

    return await find_user(session, username) if username else await sole_user(session)


async def _tools(args: argparse.Namespace) -> int | None:
    from fable_core.capabilities import load_capabilities
    from fable_core.tools import REGISTRY

    load_capabilities()
    if args.json:
        print(json.dumps([
            {"name": t.name, "title": t.title, "description": t.description, "scope": t.scope, "toolset": t.group,
             **({"followed_by": t.followed_by.tool} if t.followed_by else {}),
             "input_schema": t.input_schema, "output_schema": t.output_schema}
            for t in REGISTRY
        ], indent=2))
        return 0
    width = max(len(t.name) for t in REGISTRY)
    sets = max(len(t.group) for t in REGISTRY)
    for t in REGISTRY:
        print(f"{t.name:<{width}}  {t.scope:<5}  {t.group:<{sets}}  {t.description.splitlines()[0]}")
    return 0


async def _call(args: argparse.Namespace) -> int | None:
    from fable_core.tools.caller import Caller
    from fable_web.calls import call, read_arguments, refuse_no_wait

    arguments = read_arguments(args)

    async def run(fable: Any) -> int:
        t = fable.dispatcher.tool(args.tool)  # unknown tool: fail before touching users
        if args.no_wait:
            refuse_no_wait(t)
        async with fable.db.transaction() as session:
            user = await _chosen_user(session, args.user)
        caller = Caller(user_id=user.id, username=user.username, role=user.role, surface="cli")
        return await call(fable, args, arguments, caller)

    return await _with_fable(run)


async def _backup(args: argparse.Namespace) -> int | None:
    from fable_core.data.backup import archive

    async def run(fable: Any) -> int:
        out: Any = args.output.open("wb") if args.output is not None else sys.stdout.buffer
        try:
            async with fable.db.snapshot() as session:  # one moment of every table
                counts = await archive.write_archive(session, out, scope="instance", embeddings=args.embeddings,
                                                     data_dir=fable.settings.fable_data_dir)
        finally:
            if args.output is not None:
                out.close()
        summary = json.dumps({"output": str(args.output) if args.output else "-", "tables": counts})
        print(summary, file=sys.stdout if args.output is not None else sys.stderr)
        return 0

    return await _with_fable(run)


async def _restore(args: argparse.Namespace) -> int | None:
    from fable_core.admin.audit import Actor
    from fable_core.data.backup import archive
    from fable_core.data.backup.backups import restore_archive

    async def run(fable: Any) -> int:
        with args.file.open("rb") as f:
            zf, manifest = archive.read_archive(f)
            async with fable.db.transaction() as session:
                # an account's own archive goes into that account
                into = await archive.owner_here(session, manifest) if manifest["scope"] == "user" else None
                restored = await restore_archive(session, zf, manifest, Actor.operator(), into_user=into,
                                                 data_dir=fable.settings.fable_data_dir)
        print(json.dumps(restored.model_dump(mode="json")))
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
    "backup": _backup,
    "restore": _restore,
}

if __name__ == "__main__":
    raise SystemExit(main())
