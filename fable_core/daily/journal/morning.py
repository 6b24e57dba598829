"""The sections of the morning note the journal gathers itself: tasks due today and overdue
(order 10), active projects (40) and threads left open on recent journal days (60). Other domains
register theirs beside their own tools (events 20, weather 30, moments 50).

Each is one or two indexed queries on the day's user's own rows, bounded by ``LIMIT``: cheap
at any number of notes (``bench/journal.py``).

Open threads are found by rule, not by a model, so the same days give the same threads: in the
user's messages of the last :data:`THREAD_DAYS` journal days (within a week), a sentence that
promises something ("I'll", "I need to", "remind me to", ...), and a question of theirs whose
answer failed or never came; and the assistant's question that ended a day unanswered.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.daily.journal.sections import PrepDay, section
from fable_core.db.models import JournalDay, Message, Note, Project
from fable_core.tools.access import not_assigned_to_others, owned_by
from fable_core.tools.caller import Caller

__all__ = ["MAX_ITEMS", "THREAD_DAYS", "find_threads"]

MAX_ITEMS = 15
MAX_PROJECTS = 8
THREAD_DAYS = 3
MAX_THREADS = 8
_OPEN = ("todo", "in_progress")
_APOSTROPHE = "['\u2019]"  # typed, or a phone's typographic one
_PROMISE = re.compile(
    rf"\b(i{_APOSTROPHE}ll|i will|i need to|i have to|i must|i should|i{_APOSTROPHE}m going to|i am going to|"
    rf"i want to|remind me|don{_APOSTROPHE}t forget|do not forget|todo\b|to do:)", re.IGNORECASE)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# --- tasks ------------------------------------------------------------------------------------


def render_tasks(data: dict[str, Any]) -> str:
    lines: list[str] = []
    if data.get("due_today"):
        lines += ["**Due today**", *(f"- {t['title']}" for t in data["due_today"])]
    if data.get("overdue"):
        lines += ["", "**Overdue**", *(f"- {t['title']} (due {t['due']})" for t in data["overdue"])]
    return "\n".join(lines).strip()


@section("tasks", order=10, render=render_tasks)
async def tasks_due(session: AsyncSession, caller: Caller, day: PrepDay) -> dict[str, Any] | None:
    """Open tasks due on the day, and overdue ones (oldest first), at most :data:`MAX_ITEMS` each."""
    # the caller's own tasks, less those assigned to someone else (theirs to do)
    base = select(Note.id, Note.title, Note.due_date, Note.priority).where(
        owned_by(Note, caller), not_assigned_to_others(caller),
        Note.status.in_(_OPEN))
    today = (await session.execute(base.where(Note.due_date == day.day)
                                   .order_by(Note.id).limit(MAX_ITEMS))).all()
    overdue = (await session.execute(base.where(Note.due_date < day.day)
                                     .order_by(Note.due_date, Note.id).limit(MAX_ITEMS))).all()
    data: dict[str, Any] = {}
    if today:
        data["due_today"] = [_task(t) for t in today]
    if overdue:
        data["overdue"] = [{**_task(t), "due": t.due_date.isoformat()} for t in overdue]
    return data or None


def _task(row: Any) -> dict[str, Any]:
    task: dict[str, Any] = {"id": row.id, "title": row.title}
    if row.priority:
        task["priority"] = row.priority
    return task


# --- projects ---------------------------------------------------------------------------------


def render_projects(data: list[dict[str, Any]]) -> str:
    def line(p: dict[str, Any]) -> str:
        n = p.get("open_tasks", 0)
        return f"- {p['title']}" + (f" ({n} open task{'s' if n != 1 else ''})" if n else "")

    return "\n".join(["**Active projects**", *(line(p) for p in data)])


@section("projects", order=40, render=render_projects)
async def active_projects(session: AsyncSession, caller: Caller, day: PrepDay) -> list[dict[str, Any]] | None:
    """The user's active projects, most recently touched first, with their open tasks counted."""
    rows = (await session.execute(select(Project.id, Project.title, Project.goal).where(
        owned_by(Project, caller), Project.status == "active")
        .order_by(Project.updated_at.desc(), Project.id.desc()).limit(MAX_PROJECTS))).all()
    if not rows:
        return None
    counts = dict((await session.execute(select(Note.project_id, func.count()).where(
        Note.project_id.in_([r.id for r in rows]), Note.status.in_(_OPEN)).group_by(Note.project_id))).all())
    projects = []
    for r in rows:
        project: dict[str, Any] = {"id": r.id, "title": r.title}
        if r.goal:
            project["goal"] = _short(r.goal, 160)
        if counts.get(r.id):
            project["open_tasks"] = counts[r.id]
        projects.append(project)
    return projects


# --- open threads -----------------------------------------------------------------------------


def render_threads(data: list[dict[str, Any]]) -> str:
    words = {"promise": "you said", "question": "you asked", "asked": "left unanswered"}
    return "\n".join(["**Left open**", *(f"- {t['said']} ({words[t['kind']]}, {_weekday(t['day'])})" for t in data)])


def _weekday(day: str) -> str:
    return f"{date.fromisoformat(day):%A}"


@section("threads", order=60, render=render_threads)
async def open_threads(session: AsyncSession, caller: Caller, day: PrepDay) -> list[dict[str, Any]] | None:
    """Promises and unanswered questions from the last journal days before this one."""
    days = (await session.execute(select(JournalDay.day, JournalDay.conversation_id).where(
        owned_by(JournalDay, caller), JournalDay.day < day.day, JournalDay.day >= day.day - timedelta(days=7))
        .order_by(JournalDay.day.desc()).limit(THREAD_DAYS))).all()
    if not days:
        return None
    when = {r.conversation_id: r.day for r in days}
    rows = (await session.execute(select(
        Message.conversation_id, Message.role, func.left(Message.content, 2000).label("content"), Message.status)
        .where(Message.conversation_id.in_(list(when))).order_by(Message.conversation_id, Message.id)
        .limit(300))).all()
    by_day: dict[date, list[tuple[str, str, str]]] = {}
    for r in rows:
        by_day.setdefault(when[r.conversation_id], []).append((r.role, r.content, r.status))
    threads = [t for d in sorted(by_day, reverse=True) for t in find_threads(d, by_day[d])]
    return threads[:MAX_THREADS] or None


def find_threads(day: date, messages: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """The open threads of one day's messages ``(role, content, status)``, in order."""
    found: list[dict[str, Any]] = []
    for i, (role, content, _) in enumerate(messages):
        if role != "user":
            continue
        answer = messages[i + 1] if i + 1 < len(messages) else None
        unanswered = answer is None or answer[0] != "assistant" or answer[2] != "done"
        for sentence in (s.strip() for s in _SENTENCE.findall(content)):
            if _PROMISE.search(sentence):
                found.append({"day": day.isoformat(), "kind": "promise", "said": _short(sentence)})
            elif sentence.endswith("?") and unanswered:
                found.append({"day": day.isoformat(), "kind": "question", "said": _short(sentence)})
    if messages and messages[-1][0] == "assistant" and messages[-1][2] == "done":
        last = [s.strip() for s in _SENTENCE.findall(messages[-1][1]) if s.strip()]
        if last and last[-1].endswith("?") and len(messages) > 1:  # an opener alone is not a conversation
            found.append({"day": day.isoformat(), "kind": "asked", "said": _short(last[-1])})
    return found
