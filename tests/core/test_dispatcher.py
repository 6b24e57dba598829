"""The dispatcher: validation, authorisation, one transaction, typed errors, usage and events.

Test tools live on a private :class:`Registry`; the dispatcher runs them against the session's
real database, so "nothing written" is checked by counting rows.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field
from sqlalchemy import func, select

from fable_core.db.models import AppLog, Project
from fable_core.errors import Conflict, Forbidden, InvalidInput, NotFound, UnknownTool
from fable_core.infra.events import Event, EventBus, ProjectChanged
from fable_core.runtime import Fable
from fable_core.tools import Context, Registry, tool
from fable_core.tools.caller import Caller
from fable_core.tools.dispatcher import Dispatcher, InternalError


class Made(BaseModel):
    id: int
    title: str


registry = Registry()
ran: list[str] = []


async def _make(ctx: Context, title: str) -> Project:
    project = Project(user_id=ctx.user_id, title=title)
    ctx.session.add(project)
    await ctx.session.flush()
    ctx.emit(ProjectChanged(ctx.user_id, project.id, "created"))
    return project


@tool(group="test", title="Make projects", scope="write", registry=registry)
async def make_projects(
    ctx: Context, title: str, count: Annotated[int, Field(ge=1, le=5)] = 1
) -> Made:
    """Create ``count`` projects named ``title``."""
    ran.append("make_projects")
    made = [await _make(ctx, f"{title} {i}") for i in range(count)]
    return Made(id=made[0].id, title=made[0].title)


@tool(group="test", title="Make then conflict", scope="write", registry=registry)
async def make_then_conflict(ctx: Context, title: str) -> Made:
    """Create two projects, then refuse."""
    await _make(ctx, title)
    await _make(ctx, title + " again")
    raise Conflict(f"{title!r} collides")


@tool(group="test", title="Make then crash", scope="write", registry=registry)
async def make_then_crash(ctx: Context, title: str) -> Made:
    """Create a project, then fail unexpectedly."""
    await _make(ctx, title)
    raise RuntimeError("boom: internal detail 7f3a")


@tool(group="test", title="Make then bad result", scope="write", registry=registry)
async def make_then_bad_result(ctx: Context, title: str) -> Made:
    """Create a project, then return something that is not a Made."""
    await _make(ctx, title)
    return {"title": title}  # type: ignore[return-value]


@tool(group="test", title="Orphan", scope="write", registry=registry)
async def make_orphan(ctx: Context, user_id: int) -> Made:
    """Create a project for a user id that may not exist (a foreign-key violation)."""
    project = Project(user_id=user_id, title="orphan")
    ctx.session.add(project)
    await ctx.session.flush()
    return Made(id=project.id, title=project.title)


@tool(group="test", title="Count projects", scope="read", registry=registry)
async def count_projects(ctx: Context) -> Made:
    """How many projects the caller has."""
    n = await ctx.session.scalar(select(func.count()).where(Project.user_id == ctx.user_id))
    return Made(id=n or 0, title="count")


@pytest.fixture
def dispatcher(fable: Fable) -> Dispatcher:
    ran.clear()
    return Dispatcher(fable.db, fable.settings, registry=registry, events=EventBus(),
                      usage=fable.dispatcher.usage)


async def projects(fable: Fable) -> int:
    async with fable.db.transaction() as s:
        return await s.scalar(select(func.count()).select_from(Project)) or 0


async def logs(fable: Fable) -> list[AppLog]:
    await fable.dispatcher.usage.flush()  # rows are written in batches
    async with fable.db.transaction() as s:
        # not the request log's: a served app's rows may land a moment after its test ended
        return list(await s.scalars(select(AppLog).where(AppLog.category != "request").order_by(AppLog.id)))


async def test_a_call_runs_the_tool_and_returns_json_ready_data(
    dispatcher: Dispatcher, fable: Fable, alice: Caller
) -> None:
    result = await dispatcher.call("make_projects", {"title": "Garden", "count": 2}, alice)
    assert result == {"id": result["id"], "title": "Garden 0"}
    assert await projects(fable) == 2


async def test_unknown_tool_is_a_typed_error(dispatcher: Dispatcher, alice: Caller) -> None:
    with pytest.raises(UnknownTool) as raised:
        await dispatcher.call("no_such_tool", {}, alice)
    assert raised.value.type == "unknown_tool" and "no_such_tool" in raised.value.message
    assert isinstance(raised.value, NotFound)


async def test_bad_arguments_list_every_problem_and_write_nothing(
    dispatcher: Dispatcher, fable: Fable, alice: Caller
) -> None:
    with pytest.raises(InvalidInput) as raised:
        await dispatcher.call("make_projects", {"count": 9, "colour": "red"}, alice)
    problems = {p["field"]: p for p in raised.value.details["errors"]}
    assert set(problems) == {"title", "count", "colour"}
    assert problems["count"]["input"] == "9" and "less than or equal to 5" in problems["count"]["message"]
    assert "title" in raised.value.message and "count" in raised.value.message
    assert ran == [] and await projects(fable) == 0


@pytest.mark.parametrize("arguments", [["title"], "title", 3])
async def test_arguments_must_be_an_object(
    dispatcher: Dispatcher, alice: Caller, arguments: Any
) -> None:
    with pytest.raises(InvalidInput, match="must be an object"):
        await dispatcher.call("make_projects", arguments, alice)


async def test_wrong_types_are_not_coerced_silently(dispatcher: Dispatcher, alice: Caller) -> None:
    with pytest.raises(InvalidInput) as raised:
        await dispatcher.call("make_projects", {"title": "x", "count": "lots"}, alice)
    assert [p["field"] for p in raised.value.details["errors"]] == ["count"]


async def test_read_scope_caller_cannot_run_a_write_tool_and_nothing_is_written(
    dispatcher: Dispatcher, fable: Fable, alice: Caller
) -> None:
    reader = Caller(user_id=alice.user_id, username="alice", scope="read", surface="mcp")
    with pytest.raises(Forbidden) as raised:
        await dispatcher.call("make_projects", {"title": "Nope"}, reader)
    assert raised.value.details == {"tool": "make_projects"}
    assert ran == [] and await projects(fable) == 0
    assert (await dispatcher.call("count_projects", {}, reader))["id"] == 0, "reads are allowed"


async def test_a_domain_error_mid_way_rolls_back_everything(
    dispatcher: Dispatcher, fable: Fable, alice: Caller
) -> None:
    with pytest.raises(Conflict, match="'Dup' collides"):
        await dispatcher.call("make_then_conflict", {"title": "Dup"}, alice)
    assert await projects(fable) == 0
    [row] = await logs(fable)
    assert (row.category, row.action, row.error_type) == ("usage", "make_then_conflict", "conflict")
    assert row.traceback is None


async def test_unexpected_exception_is_an_internal_error_with_the_traceback_only_in_app_logs(
    dispatcher: Dispatcher, fable: Fable, alice: Caller
) -> None:
    with pytest.raises(InternalError) as raised:
        await dispatcher.call("make_then_crash", {"title": "Crash"}, alice)
    err = raised.value
    assert err.type == "internal_error" and err.http_status == 500
    assert "7f3a" not in err.message and "Traceback" not in err.message
    assert "7f3a" not in str(err.to_dict())
    assert await projects(fable) == 0
    [row] = await logs(fable)
    assert (row.category, row.action, row.error_type) == ("error", "make_then_crash", "internal_error")
    assert row.traceback and "RuntimeError: boom: internal detail 7f3a" in row.traceback


async def test_an_invalid_result_is_an_internal_error_and_rolls_back(
    dispatcher: Dispatcher, fable: Fable, alice: Caller
) -> None:
    with pytest.raises(InternalError, match="invalid result"):
        await dispatcher.call("make_then_bad_result", {"title": "Bad"}, alice)
    assert await projects(fable) == 0


async def test_database_errors_are_translated_at_the_boundary(
    dispatcher: Dispatcher, fable: Fable, alice: Caller, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, "fable_core.db.errors"), \
            pytest.raises(NotFound, match="referenced row does not exist") as refused:
        await dispatcher.call("make_orphan", {"user_id": alice.user_id + 1000}, alice)
    # the server's words (its table and constraint names) stay in the log, never reach a client
    said = str(refused.value)
    assert "projects" not in said and "constraint" not in said and "fkey" not in said, said
    assert "projects_user_id_fkey" in caplog.text
    assert await projects(fable) == 0
    [row] = await logs(fable)
    assert row.error_type == "not_found"


async def test_each_call_records_usage_with_surface_and_duration(
    dispatcher: Dispatcher, fable: Fable, alice: Caller
) -> None:
    via_mcp = Caller(user_id=alice.user_id, username="alice", surface="mcp")
    await dispatcher.call("make_projects", {"title": "Logged"}, via_mcp)
    await dispatcher.call("count_projects", {}, alice)
    rows = await logs(fable)
    assert [(r.category, r.action, r.surface, r.user_id, r.username) for r in rows] == [
        ("usage", "make_projects", "mcp", alice.user_id, "alice"),
        ("usage", "count_projects", "internal", alice.user_id, "alice"),
    ]
    assert all(r.duration_ms is not None and r.duration_ms > 0 for r in rows)
    assert all(r.error_type is None for r in rows)


async def test_events_are_published_after_commit_and_never_for_failed_calls(
    dispatcher: Dispatcher, fable: Fable, alice: Caller
) -> None:
    seen: list[tuple[Event, int]] = []

    async def on_event(event: Event) -> None:  # runs after commit: another session sees the row
        async with fable.db.transaction() as s:
            seen.append((event, await s.scalar(select(func.count()).select_from(Project)) or 0))

    dispatcher.events.subscribe(on_event)
    made = await dispatcher.call("make_projects", {"title": "Seen"}, alice)
    with pytest.raises(Conflict):
        await dispatcher.call("make_then_conflict", {"title": "Unseen"}, alice)
    assert seen == [(ProjectChanged(alice.user_id, made["id"], "created"), 1)]


async def test_a_failing_subscriber_does_not_fail_the_call(
    dispatcher: Dispatcher, fable: Fable, alice: Caller
) -> None:
    def broken(event: Event) -> None:
        raise RuntimeError("subscriber bug")

    dispatcher.events.subscribe(broken)
    await dispatcher.call("make_projects", {"title": "Still"}, alice)
    assert await projects(fable) == 1


async def test_refused_calls_are_logged_as_usage_with_their_error(
    dispatcher: Dispatcher, fable: Fable, alice: Caller
) -> None:
    with pytest.raises(InvalidInput):
        await dispatcher.call("make_projects", {"title": "x", "count": 0}, alice)
    [row] = await logs(fable)
    assert (row.category, row.error_type) == ("usage", "invalid_input")
    assert "count" in (row.error_message or "") and row.traceback is None


# --- phases, streams, a tool calling a tool ------------------------------------------------------


@tool(group="test", title="Slow remote", scope="write", transaction="phases", registry=registry)
async def slow_remote(ctx: Context, title: str) -> Made:
    """Make a project, wait on something remote holding no connection, make another."""
    async with ctx.transaction():
        first = await _make(ctx, title)
    waiting.append((ctx.dispatcher._slots._value, ctx._session))  # type: ignore[union-attr]
    async with ctx.transaction():
        await _make(ctx, title + " 2")
    return Made(id=first.id, title=first.title)


@tool(group="test", title="Phase then fail", scope="write", transaction="phases", registry=registry)
async def phase_then_fail(ctx: Context, title: str) -> Made:
    """A committed phase, then a failure: the first phase's work and events stay."""
    async with ctx.transaction():
        await _make(ctx, title)
    raise Conflict("the second phase refused")


@tool(group="test", title="Countdown", scope="read", stream=True, registry=registry)
async def countdown(ctx: Context, n: Annotated[int, Field(ge=1, le=5)]) -> Made:
    """Report n steps of progress, then the result."""
    for i in range(n, 0, -1):
        await ctx.progress("tick", {"left": i}, id=f"c:{i}")
    return Made(id=n, title="liftoff")


@tool(group="test", title="Make via a tool", scope="write", registry=registry)
async def make_via(ctx: Context, title: str) -> Made:
    """Call make_projects inside this call's transaction, then refuse if told to."""
    made = await ctx.call("make_projects", {"title": title})
    if title == "refuse":
        raise Conflict("refused after the inner call")
    return Made.model_validate(made, from_attributes=True)


waiting: list[Any] = []


async def test_a_phased_tool_holds_no_slot_or_session_between_phases(
    dispatcher: Dispatcher, fable: Fable, alice: Caller
) -> None:
    waiting.clear()
    await dispatcher.call("slow_remote", {"title": "P"}, alice)
    assert waiting == [(fable.settings.fable_db_pool_size, None)]
    assert await projects(fable) == 2


async def test_a_failure_after_a_committed_phase_keeps_that_phase_and_its_events(
    dispatcher: Dispatcher, fable: Fable, alice: Caller
) -> None:
    heard: list[Event] = []
    dispatcher.events.subscribe(heard.append)
    with pytest.raises(Conflict):
        await dispatcher.call("phase_then_fail", {"title": "kept"}, alice)
    assert await projects(fable) == 1 and len(heard) == 1


async def test_a_stream_reports_progress_in_order_and_returns_its_result(
    dispatcher: Dispatcher, fable: Fable, alice: Caller
) -> None:
    seen: list[Any] = []

    async def sink(item: Any) -> None:
        seen.append((item.event, item.data, item.id))

    result = await dispatcher.call("countdown", {"n": 3}, alice, progress=sink)
    assert result == {"id": 3, "title": "liftoff"}
    assert seen == [("tick", {"left": 3}, "c:3"), ("tick", {"left": 2}, "c:2"), ("tick", {"left": 1}, "c:1")]
    assert await dispatcher.call("countdown", {"n": 1}, alice) == {"id": 1, "title": "liftoff"}  # no sink
    with pytest.raises(InvalidInput):
        await dispatcher.call("countdown", {"n": 9}, alice, progress=sink)
    assert [r.action for r in await logs(fable)] == ["countdown", "countdown", "countdown"]


async def test_a_tool_calls_a_tool_inside_its_transaction_with_the_same_rules(
    dispatcher: Dispatcher, fable: Fable, alice: Caller
) -> None:
    assert (await dispatcher.call("make_via", {"title": "inner"}, alice))["title"] == "inner 0"
    with pytest.raises(Conflict):
        await dispatcher.call("make_via", {"title": "refuse"}, alice)
    assert await projects(fable) == 1  # the refused outer call took the inner call's work with it
    reader = Caller(user_id=alice.user_id, scope="read")
    with pytest.raises(Forbidden):
        await dispatcher.call("make_via", {"title": "x"}, reader)
    actions = [r.action for r in await logs(fable)]
    assert actions.count("make_projects") == 2 and actions.count("make_via") == 3


def test_streams_always_run_in_phases() -> None:
    t = registry.get("countdown")
    assert t is not None and t.stream and t.transaction == "phases"
