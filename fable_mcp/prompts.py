"""Prompts: ready-made requests a user picks in their MCP host, filled with their own data.

Each prompt gathers what it needs through the dispatcher (so access rules hold) and asks the
agent to act with Fable's tools. Arguments are completed by :mod:`fable_mcp.completions`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from fable_core.errors import InvalidInput
from fable_core.knowledge.lookups import find_note, is_id
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.clock import today_for
from fable_mcp.resources import note_markdown, note_uri, project_uri

__all__ = ["PROMPTS", "get_prompt", "list_prompts"]

Render = Callable[[Fable, Caller, dict[str, str]], Awaitable[list[types.PromptMessage]]]


@dataclass(frozen=True, slots=True)
class PromptSpec:
    name: str
    title: str
    description: str
    arguments: tuple[types.PromptArgument, ...]
    render: Render


def _user(text: str) -> types.PromptMessage:
    return types.PromptMessage(role="user", content=types.TextContent(text=text))


def _bullets(items: list[dict[str, Any]]) -> str:
    if not items:
        return "(none)"
    lines = []
    for n in items:
        extra = ", ".join(f"{k.replace('_', ' ')} {n[k]}" for k in ("status", "due_date") if n.get(k))
        lines.append(f"- {n['title']} (id {n['id']}{', ' + extra if extra else ''})")
    return "\n".join(lines)


def _review_days(raw: str | None, today: date) -> tuple[date, date]:
    """The day to review (default today, the caller's) and the day after, which bounds the tasks due.

    The last day a ``date`` holds has no day after: it is refused with the malformed ones.
    """
    try:
        day = date.fromisoformat(raw) if raw else today
        return day, day + timedelta(days=1)
    except (ValueError, OverflowError) as e:
        raise InvalidInput(f"date {raw!r} is not a day to review: give YYYY-MM-DD, before "
                           f"{date.max.isoformat()}", field="date") from e


async def _daily_review(fable: Fable, caller: Caller, args: dict[str, str]) -> list[types.PromptMessage]:
    day, next_day = _review_days(args.get("date"), await today_for(fable.db, caller))
    tag = {"tag": args["tag"]} if args.get("tag") else {}

    async def notes(**filters: Any) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = (await fable.dispatcher.call("list_notes", {**filters, **tag}, caller))["items"]
        return found

    due = await notes(kind="task", status=["todo", "in_progress"], sort="due", limit=50,
                      due_before=next_day.isoformat())
    doing = await notes(kind="task", status=["in_progress"], limit=20)
    recent = await notes(sort="updated", limit=15)
    return [_user(
        f"Daily review for {day.isoformat()}.\n\n"
        f"Tasks due by today or overdue:\n{_bullets(due)}\n\n"
        f"In progress:\n{_bullets(doing)}\n\n"
        f"Recently changed notes:\n{_bullets(recent)}\n\n"
        "Help me review my day: what is overdue, what to focus on next, what can be dropped. "
        "Propose changes and, once I agree, make them with Fable's tools (complete_task, "
        "update_note, create_note for a short review note titled 'Review "
        f"{day.isoformat()}')."
    )]


async def _summarise_project(fable: Fable, caller: Caller, args: dict[str, str]) -> list[types.PromptMessage]:
    ref = args["project"].strip()
    which = {"project_id": int(ref)} if is_id(ref) else {"project": ref}
    project = await fable.dispatcher.call("get_project", which, caller)
    notes = await fable.dispatcher.call("list_notes", {"project_id": project["id"], "limit": 100}, caller)
    return [_user(
        f"Summarise the project {project['title']!r} (id {project['id']}, {project_uri(project['id'])}).\n\n"
        f"Description: {project['description'] or '(none)'}\nGoal: {project['goal'] or '(none)'}\n\n"
        f"Its notes and tasks:\n{_bullets(notes['items'])}\n\n"
        "Read the notes that matter with read_note, then write a short summary: where the "
        "project stands, what was decided, open tasks and risks, and the next three steps."
    )]


async def _note_to_tasks(fable: Fable, caller: Caller, args: dict[str, str]) -> list[types.PromptMessage]:
    note_id = await find_note(fable, caller, args["note"])
    note = await fable.dispatcher.call("read_note", {"note_id": note_id}, caller)
    where = f", project_id={note['project_id']}" if note.get("project_id") else ""
    resource = types.EmbeddedResource(resource=types.TextResourceContents(
        uri=note_uri(note_id), mime_type="text/markdown", text=note_markdown(note)))
    return [
        types.PromptMessage(role="user", content=resource),
        _user(
            f"Turn the note above ({note['title']!r}, id {note_id}) into tasks. Find each concrete "
            "action in it; for each, call create_note with a short imperative title, "
            f"status='todo', parent_id={note_id}{where}, and a due_date when the note gives one. "
            "Skip actions that already exist as tasks (list_notes with parent_id first). Then "
            "list what you created."
        ),
    ]


def _arg(name: str, description: str, required: bool) -> types.PromptArgument:
    return types.PromptArgument(name=name, description=description, required=required)


PROMPTS: dict[str, PromptSpec] = {p.name: p for p in (
    PromptSpec("daily_review", "Daily review",
               "Review the day: tasks due or overdue, work in progress and recent notes, with "
               "suggestions to act on.",
               (_arg("date", "Day to review, YYYY-MM-DD (default today).", False),
                _arg("tag", "Only notes with this tag (e.g. 'work').", False)), _daily_review),
    PromptSpec("summarise_project", "Summarise a project",
               "Summarise a project's state, decisions, open tasks and next steps from its notes.",
               (_arg("project", "Project name (partial names work) or id.", True),), _summarise_project),
    PromptSpec("note_to_tasks", "Turn a note into tasks",
               "Extract the actions in a note (meeting notes, a plan) and create them as sub-tasks.",
               (_arg("note", "Title or id of the note.", True),), _note_to_tasks),
)}


def list_prompts() -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[
        types.Prompt(name=p.name, title=p.title, description=p.description, arguments=list(p.arguments))
        for p in PROMPTS.values()
    ])


async def get_prompt(
    fable: Fable, caller: Caller, name: str, arguments: dict[str, str] | None
) -> types.GetPromptResult:
    spec = PROMPTS.get(name)
    if spec is None:
        raise MCPError(types.INVALID_PARAMS, f"no prompt named {name!r}; prompts: {', '.join(PROMPTS)}")
    args = {k: v for k, v in (arguments or {}).items() if v is not None and str(v).strip()}
    missing = [a.name for a in spec.arguments if a.required and a.name not in args]
    if missing:
        raise MCPError(types.INVALID_PARAMS, f"prompt {name} needs argument(s): {', '.join(missing)}")
    messages = await spec.render(fable, caller, args)
    return types.GetPromptResult(description=spec.description, messages=messages)
