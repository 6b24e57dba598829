"""Log messages to the client (``notifications/message``): per session (2025) or per request (2026)."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from fable_core.runtime import Fable
from fable_core.tools import Context, Registry, tool
from fable_core.tools.caller import Caller
from fable_core.tools.results import Deleted
from fable_mcp.server import build_server

LEGACY = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # set_logging_level


class Heard:
    """A ``logging_callback`` that keeps what arrived, as (level, data)."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, Any]] = []

    async def __call__(self, params: types.LoggingMessageNotificationParams) -> None:
        assert params.logger == "fable"
        self.messages.append((params.level, params.data))

    def take(self) -> list[tuple[str, Any]]:
        taken, self.messages = self.messages, []
        return taken


def _without_duration(messages: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Debug lines carry a measured duration: check it is there, then drop it."""
    out = []
    for level, data in messages:
        if level == "debug":
            assert isinstance(data.pop("duration_ms"), float)
        out.append((level, data))
    return out


MISSING = ("warning", {"tool": "read_note", "type": "not_found", "message": "note 424242 not found"})
CALLED_MISSING = ("debug", {"tool": "read_note", "ok": False})


@LEGACY
async def test_a_session_hears_what_its_level_lets_through(connect) -> None:
    heard = Heard()
    async with connect(mode="legacy", logging_callback=heard) as client:
        await client.call_tool("read_note", {"note_id": 424242})
        await client.send_ping()  # a round trip: anything sent before it has arrived
        before_set_level = heard.take()
        await client.set_logging_level("warning")
        await client.call_tool("read_note", {"note_id": 424242})
        await client.send_ping()
        at_warning = heard.take()
        await client.set_logging_level("debug")
        await client.call_tool("read_note", {"note_id": 424242})
        created = await client.call_tool("create_note", {"title": "Logged"})
        await client.send_ping()
        at_debug = _without_duration(heard.take())
        await client.set_logging_level("error")
        await client.call_tool("read_note", {"note_id": 424242})
        await client.send_ping()
        at_error = heard.take()
    assert not created.is_error
    assert before_set_level == [MISSING]  # the default is warning
    assert at_warning == [MISSING]
    assert at_debug == [MISSING, CALLED_MISSING, ("debug", {"tool": "create_note", "ok": True})]
    assert at_error == []


@LEGACY
async def test_two_sessions_keep_their_own_levels(connect_fast) -> None:
    chatty, quiet = Heard(), Heard()
    async with (
        connect_fast(mode="legacy", logging_callback=chatty) as first,
        connect_fast(mode="legacy", logging_callback=quiet) as second,
    ):
        await first.set_logging_level("debug")
        await second.set_logging_level("error")
        for client in (first, second):
            await client.call_tool("read_note", {"note_id": 424242})
            await client.send_ping()
    assert _without_duration(chatty.messages) == [MISSING, CALLED_MISSING]
    assert quiet.messages == []


@pytest.mark.parametrize(("level", "expected"), [
    (None, []),  # 2026-07-28: no opt-in on the request, no log messages
    ("warning", [MISSING]),
    ("debug", [MISSING, CALLED_MISSING]),
    ("error", []),
])
async def test_2026_requests_opt_in_by_their_own_meta(connect_fast, level: str | None, expected: list) -> None:
    heard = Heard()
    async with connect_fast(log_level=level, logging_callback=heard) as client:
        assert client.protocol_version == "2026-07-28"
        await client.call_tool("read_note", {"note_id": 424242})
    assert _without_duration(heard.messages) == expected


async def test_bad_arguments_and_scope_are_warnings_naming_the_tool(connect_fast, call) -> None:
    note = await call("create_note", title="Kept")
    heard = Heard()
    async with connect_fast(scope="read", log_level="warning", logging_callback=heard) as client:
        await client.call_tool("read_note", {"note_id": "seven"})
        await client.call_tool("delete_note", {"note_id": note["id"]})
    (bad_level, bad), denied = heard.messages
    assert bad_level == "warning" and bad["tool"] == "read_note" and bad["type"] == "invalid_input"
    assert bad["message"].startswith("invalid arguments for read_note: note_id: Input should be a valid integer")
    assert denied == ("warning", {"tool": "delete_note", "type": "forbidden",
                                  "message": "delete_note changes data; this credential has read-only scope"})
    assert (await call("read_note", note_id=note["id"]))["title"] == "Kept"


@LEGACY
async def test_an_unexpected_failure_is_an_error_without_traceback(fable: Fable, alice: Caller) -> None:
    registry = Registry()

    @tool(group="test", title="Break", scope="read", registry=registry)
    async def explode(ctx: Context) -> Deleted:
        """Fail the way a bug would."""
        raise RuntimeError("secret internal detail")

    heard = Heard()
    local = Fable(fable.settings, fable.db, registry=registry)
    async with Client(build_server(local, alice), mode="legacy", logging_callback=heard) as client:
        await client.set_logging_level("error")
        result = await client.call_tool("explode", {})
    assert result.is_error
    assert heard.messages == [("error", {"tool": "explode", "type": "internal_error",
                                         "message": "explode failed unexpectedly; the error was logged"})]
    assert "secret" not in str(heard.messages) and "Traceback" not in str(heard.messages)
