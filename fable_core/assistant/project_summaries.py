"""Project auto-summaries, kept fresh in the background: when a note in a project changes, the
project's summary is rewritten (through the dispatcher, ``summarize_project``) after a short
delay — at most once per ``debounce`` seconds per project (default one hour), so a burst of
edits costs one model call. ``search_projects`` matches against these summaries. An answer
that is empty or repeats the prompt is not stored (``summarize_project`` says so); the old
summary stays."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated

from pydantic import BaseModel, Field
from sqlalchemy import func, select

from fable_core.assistant.answers import summary_from
from fable_core.assistant.gate import background
from fable_core.assistant.note_drafts import llm
from fable_core.db.database import Database
from fable_core.db.models import Note, Project
from fable_core.errors import FableError
from fable_core.infra.events import Event, EventBus, NoteChanged
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import get_visible, reach_of, readable
from fable_core.tools.caller import Caller
from fable_core.tools.dispatcher import Dispatcher

__all__ = ["ProjectSummaries"]

_log = logging.getLogger(__name__)


class ProjectSummaries:
    def __init__(self, db: Database, dispatcher: Dispatcher, events: EventBus, *,
                 delay: float = 30.0, debounce: float = 3600.0) -> None:
        self.db = db
        self.dispatcher = dispatcher
        self.delay = delay
        self.debounce = debounce
        self._events = events
        self._scheduled: dict[int, asyncio.Task[None]] = {}
        self._summarised: dict[int, float] = {}  # project → monotonic time of its last summary here
        self._unsubscribe: Callable[[], None] = lambda: None

    def start(self) -> None:
        self._unsubscribe = self._events.subscribe(self._on_event)

    async def stop(self) -> None:
        self._unsubscribe()
        await self.cancel()

    async def cancel(self) -> None:
        """Drop the summaries waiting to run (and forget which ran: ids may be reused)."""
        self._summarised.clear()
        tasks = list(self._scheduled.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _on_event(self, event: Event) -> None:
        if not isinstance(event, NoteChanged) or event.kind == "deleted":
            return
        async with self.db.transaction() as s:
            row = (await s.execute(select(Project.id, Project.summary_updated_at).join(
                Note, Note.project_id == Project.id).where(Note.id == event.note_id))).first()
        if row is None or row.id in self._scheduled:
            return
        fresh_after = datetime.now(UTC) - timedelta(seconds=self.debounce)
        if row.summary_updated_at is not None and row.summary_updated_at > fresh_after:
            return  # summarised lately, maybe by another process
        if time.monotonic() - self._summarised.get(row.id, -self.debounce) < self.debounce:
            return  # summarised here after the row above was read
        self._scheduled[row.id] = asyncio.create_task(self._summarise(row.id, event.user_id))

    async def _summarise(self, project_id: int, user_id: int) -> None:
        try:
            await asyncio.sleep(self.delay)
            result = await self.dispatcher.call("summarize_project", {"project_id": project_id},
                                                Caller(user_id=user_id, surface="internal"))
            self._summarised[project_id] = time.monotonic()
            if not result.get("updated", True):
                _log.info("project %s not summarised: %s", project_id, result.get("reason"))
        except FableError as e:
            _log.info("project %s not summarised: %s", project_id, e.message)
        finally:
            self._scheduled.pop(project_id, None)

    async def idle(self) -> None:
        await asyncio.gather(*self._scheduled.values(), return_exceptions=True)


_SUMMARY = ("Summarise this project in at most 80 words: what it is about, its goal and its current "
            "state. Plain prose, no lists.")


class ProjectSummaryView(BaseModel):
    project_id: int
    auto_summary: str
    updated: bool = Field(True, description="False when the model's answer was not stored (see reason): "
                                            "auto_summary is then the summary as it was.")
    reason: str = Field("", description="Why the summary was not updated.")


@tool(group="projects", title="Summarise a project", scope="write", idempotent=True, transaction="phases",
      needs=("llm",),
      route=Route("POST", "/projects/{project_id}/summarize"))
async def summarize_project(
    ctx: Context, project_id: Annotated[int, Field(ge=1, le=2**31 - 1)]
) -> ProjectSummaryView:
    """Write the project's automatic summary (which search_projects matches).

    It is drawn from the description, goal and newest notes. An unusable answer is not stored:
    `updated` is false, `reason` says why."""
    async with ctx.reading() as session:
        project = await get_visible(session, Project, project_id, ctx.caller, need="editor")
        notes = (await session.execute(
            select(Note.title, Note.body).where(Note.project_id == project_id,
                                                readable(Note, await reach_of(session, ctx.caller)))
            .order_by(Note.updated_at.desc()).limit(15))).all()
    listing = "\n".join(f"- {t}: {b[:200]}" for t, b in notes)
    prompt = (f"Project: {project.title}\nDescription: {project.description}\n"
              f"Goal: {project.goal}\nNotes:\n{listing or '(none)'}")
    with background():  # refreshed in the background too: behind what a user waits for
        answer = await llm(ctx).complete([{"role": "system", "content": _SUMMARY}, {"role": "user", "content": prompt}],
                                         max_tokens=200)
    summary, why_not = summary_from(answer, _SUMMARY, prompt)
    async with ctx.transaction() as session:  # the project may have gone while the model wrote
        project = await get_visible(session, Project, project_id, ctx.caller, for_update=True, need="editor")
        if why_not:
            return ProjectSummaryView(project_id=project_id, auto_summary=project.auto_summary or "", updated=False,
                                      reason=f"{why_not}; the summary was left as it was")
        project.auto_summary, project.summary_updated_at = summary[:2000], func.now()
    return ProjectSummaryView(project_id=project_id, auto_summary=project.auto_summary)
