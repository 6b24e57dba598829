"""The research tools: start a run and follow it, follow it again, stop it, list and read runs.

``research`` is a streaming tool: it starts the run in the background (:mod:`.runner`), reports
its events as they come (``queries``, ``search``, ``source``, ``outline``, ``section``, then
``done``, ``error`` or ``stopped``; each with an id to resume after) and returns the run as
stored. A client that goes away (an MCP client disconnecting, a closed SSE stream) only stops
following: the run goes on; ``follow_research`` picks it up again (from ``last_event_id``),
``get_research`` reads it.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from sqlalchemy import select

from fable_core.db.models import ResearchRun
from fable_core.infra.generations import Buffer
from fable_core.outside.research.runner import find_run, generations, research_key, start_run
from fable_core.outside.websearch.searxng import SEARXNG
from fable_core.tools import Context, Follow, Route, tool
from fable_core.tools.access import owned_by
from fable_core.tools.paging import Cursor, NewestFirst
from fable_core.tools.results import absent_when_none

__all__ = ["ResearchPage", "ResearchView"]

_PAGES = NewestFirst("research", ResearchRun.id)

MAX_QUESTION = 500
Question = Annotated[str, StringConstraints(strip_whitespace=True, min_length=3, max_length=MAX_QUESTION)]
RunId = Annotated[int, Field(ge=1, le=2**31 - 1)]
EventId = Annotated[str | None, StringConstraints(max_length=64)]
Status = Literal["running", "done", "error", "stopped", "interrupted"]


class ResearchNote(BaseModel):
    note_id: int
    title: str
    role: Literal["index", "section"]


class ResearchSource(BaseModel):
    n: int
    url: str
    title: str


class ResearchView(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    question: str
    status: Status
    error: str | None = absent_when_none()
    index_note_id: int | None = absent_when_none("The index note: the summary with links to the section notes.")
    notes: list[ResearchNote] = Field([], exclude_if=lambda v: not v)
    queries: list[str] = Field([], exclude_if=lambda v: not v)
    sources: list[ResearchSource] = Field([], exclude_if=lambda v: not v)
    created_at: datetime
    finished_at: datetime | None = absent_when_none()


class ResearchItem(BaseModel):
    id: int
    question: str
    status: Status
    index_note_id: int | None = absent_when_none()
    created_at: datetime


class ResearchPage(BaseModel):
    items: list[ResearchItem]
    next_cursor: str | None = absent_when_none()


class Stopped(BaseModel):
    stopped: bool = Field(description="False when the run was not running here (finished, or in another process).")
    run: ResearchView


def view(run: ResearchRun) -> ResearchView:
    return ResearchView.model_validate({
        "id": run.id, "question": run.question, "status": run.status, "error": run.error,
        "index_note_id": run.index_note_id, "notes": run.notes or [], "queries": run.queries or [],
        "sources": run.sources or [], "created_at": run.created_at, "finished_at": run.finished_at})


@tool(group="research", title="Research a question on the web", scope="write", stream=True, open_world=True,
      destructive=True,
      needs=("llm", SEARXNG), route=Route("POST", "/research"),
      followed_by=Follow("follow_research", stop="stop_research", arguments={"run_id": "id"}, at_once={"wait": False}))
async def research(ctx: Context, question: Question, wait: bool = True) -> ResearchView:
    """Research a question on the web into notes: an index note and a note per section.

    One run at a time; rerunning a question updates its notes.

    Args:
        wait: False: return at once with the run's id (follow_research, get_research).
    """
    buffer = await start_run(ctx, question)
    if not wait:
        async with ctx.reading() as session:
            return view(await find_run(session, ctx.caller, buffer.message_id))
    return await _follow(ctx, buffer, None)


@tool(group="research", title="Follow a research run", scope="read", stream=True,
      route=Route("GET", "/research/{run_id}/events"))
async def follow_research(ctx: Context, run_id: RunId, last_event_id: EventId = None) -> ResearchView:
    """Follow a research run's progress until it ends, and return it.

    Args:
        last_event_id: Resume after this event.
    """
    async with ctx.reading() as session:
        run = await find_run(session, ctx.caller, run_id)
    buffer = _buffer(ctx, run_id)
    if buffer is not None:
        return await _follow(ctx, buffer, last_event_id)
    if run.status == "running":  # run by another process: its events are in PostgreSQL
        remote = await generations(ctx.fable).shared_follow(research_key(ctx.user_id), last_event_id)
        # no run yet on a live claim: this one's, whose first events are still on their way (one
        # research run per user at a time): followed, not answered at once without its events
        if remote is not None and remote.message_id in (None, run_id):
            async for event in remote:
                if event is not None:
                    await ctx.progress(event.event, event.data, id=event.id)
            async with ctx.reading() as session:
                return view(await find_run(session, ctx.caller, run_id))
        if remote is not None:
            remote.close()
    return view(run)


@tool(group="research", title="Stop a research run", scope="write", idempotent=True, transaction="phases",
      route=Route("POST", "/research/{run_id}/stop"))
async def stop_research(ctx: Context, run_id: RunId) -> Stopped:
    """Stop a running research run; nothing of it is written."""
    async with ctx.reading() as session:
        run = await find_run(session, ctx.caller, run_id)
    buffer = _buffer(ctx, run_id)
    runs = generations(ctx.fable)
    if buffer is not None:
        stopped = runs.stop(buffer.key)
        if stopped and buffer.task is not None:
            await asyncio.wait({buffer.task}, timeout=5)  # its end is recorded in a moment
    else:  # perhaps running on another process: asked through PostgreSQL
        stopped = run.status == "running" and await runs.stop_anywhere(research_key(ctx.user_id))
        deadline = asyncio.get_running_loop().time() + 5  # its end is recorded in a moment
        while stopped and run.status == "running" and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
            async with ctx.reading() as session:
                run = await find_run(session, ctx.caller, run_id)
    async with ctx.reading() as session:
        return Stopped(stopped=stopped, run=view(await find_run(session, ctx.caller, run_id)))


@tool(group="research", title="List research runs", scope="read", route=Route("GET", "/research"))
async def list_research(
    ctx: Context,
    limit: Annotated[int, Field(ge=1, le=100)] = 20,
    cursor: Cursor = None,
    status: Status | None = None,
) -> ResearchPage:
    """The caller's research runs, newest first."""
    query = select(ResearchRun.id, ResearchRun.question, ResearchRun.status, ResearchRun.index_note_id,
                   ResearchRun.created_at).where(owned_by(ResearchRun, ctx.caller))
    if status is not None:
        query = query.where(ResearchRun.status == status)
    rows, next_cursor = _PAGES.page((await ctx.session.execute(_PAGES.query(query, cursor, limit))).all(), limit)
    return ResearchPage(items=[ResearchItem.model_validate(r._asdict()) for r in rows], next_cursor=next_cursor)


@tool(group="research", title="Read a research run", scope="read", route=Route("GET", "/research/{run_id}"))
async def get_research(ctx: Context, run_id: RunId) -> ResearchView:
    """A research run: its question, status, notes, sources and error."""
    return view(await find_run(ctx.session, ctx.caller, run_id))



def _buffer(ctx: Context, run_id: int) -> Buffer | None:
    buffer = generations(ctx.fable).get(research_key(ctx.user_id))
    return buffer if buffer is not None and buffer.message_id == run_id else None


async def _follow(ctx: Context, buffer: Buffer, last_event_id: str | None) -> ResearchView:
    async for event in buffer.follow(last_event_id):
        if event is not None:
            await ctx.progress(event.event, event.data, id=event.id)
    async with ctx.reading() as session:
        return view(await find_run(session, ctx.caller, buffer.message_id))
