"""Notes and projects as MCP resources: ``fable://notes/{id}`` and ``fable://projects/{id}``.

Listing shows the caller's most recently changed notes and their projects; templates cover
everything else. Notes are read through the ``read_note`` tool (so access rules hold); a
project reads as ``get_project`` plus its notes, listed by ``list_notes``.
"""

from __future__ import annotations

import re
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from fable_core.caller import Caller
from fable_core.runtime import Fable
from fable_mcp.errors import RESOURCE_NOT_FOUND

__all__ = [
    "LISTED_NOTES",
    "NOTE_TEMPLATE",
    "PROJECT_TEMPLATE",
    "list_resources",
    "list_templates",
    "note_uri",
    "project_uri",
    "read_resource",
]

NOTE_TEMPLATE = "fable://notes/{id}"
PROJECT_TEMPLATE = "fable://projects/{id}"
LISTED_NOTES = 50
MARKDOWN = "text/markdown"
_URI = re.compile(r"^fable://(notes|projects)/([1-9][0-9]{0,9})$")


def note_uri(note_id: int) -> str:
    return f"fable://notes/{note_id}"


def project_uri(project_id: int) -> str:
    return f"fable://projects/{project_id}"


def list_templates() -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=[
        types.ResourceTemplate(
            name="note", title="A note or task", uri_template=NOTE_TEMPLATE, mime_type=MARKDOWN,
            description="One note or task by id, as Markdown with its title and fields.",
        ),
        types.ResourceTemplate(
            name="project", title="A project", uri_template=PROJECT_TEMPLATE, mime_type=MARKDOWN,
            description="One project by id: its description, goal and notes.",
        ),
    ])


async def list_resources(fable: Fable, caller: Caller) -> types.ListResourcesResult:
    """Recently changed notes, then the caller's projects."""
    page = await fable.dispatcher.call("list_notes", {"limit": LISTED_NOTES}, caller)
    notes = [
        types.Resource(uri=note_uri(n["id"]), name=n["title"], title=n["title"], mime_type=MARKDOWN,
                       description=_note_line(n))
        for n in page["items"]
    ]
    projects = [
        types.Resource(uri=project_uri(p["id"]), name=p["title"], title=p["title"], mime_type=MARKDOWN,
                       description=f"project {p['id']} · {p['status']}")
        for p in await visible_projects(fable, caller)
    ]
    return types.ListResourcesResult(resources=notes + projects)


async def read_resource(fable: Fable, caller: Caller, uri: str) -> types.ReadResourceResult:
    """Render a note or project as Markdown; an unknown URI is 'resource not found'."""
    match = _URI.match(uri)
    if match is None:
        raise MCPError(RESOURCE_NOT_FOUND, f"unknown resource {uri!r}; Fable serves {NOTE_TEMPLATE} "
                                           f"and {PROJECT_TEMPLATE}")
    kind, row_id = match.group(1), int(match.group(2))
    text = await (_note_text if kind == "notes" else _project_text)(fable, caller, row_id)
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type=MARKDOWN, text=text)]
    )


async def _note_text(fable: Fable, caller: Caller, note_id: int) -> str:
    note = await fable.dispatcher.call("read_note", {"note_id": note_id}, caller)
    return note_markdown(note)


def note_markdown(note: dict[str, Any]) -> str:
    """A note as Markdown: title heading, one line of fields, the body."""
    return f"# {note['title']}\n\n_{_note_line(note)}_\n\n{note['body']}".rstrip() + "\n"


def _note_line(note: dict[str, Any]) -> str:
    parts = [f"{note['kind']} {note['id']}"]
    for field in ("status", "priority", "due_date", "project_id"):
        if note.get(field) not in (None, "none"):
            parts.append(f"{field.replace('_id', '').replace('_', ' ')}: {note[field]}")
    if note.get("tags"):
        parts.append("tags: " + ", ".join(note["tags"]))
    return " · ".join(parts)


async def _project_text(fable: Fable, caller: Caller, project_id: int) -> str:
    project = await fable.dispatcher.call("get_project", {"project_id": project_id}, caller)
    page = await fable.dispatcher.call("list_notes", {"project_id": project_id, "limit": 200}, caller)
    lines = [f"# {project['title']}", "", f"_project {project['id']} · {project['status']}_", ""]
    for label, key in (("Description", "description"), ("Goal", "goal")):
        if project.get(key):
            lines += [f"## {label}", "", project[key], ""]
    lines += ["## Notes and tasks", ""]
    lines += [f"- [{n['title']}]({note_uri(n['id'])}) — {_note_line(n)}" for n in page["items"]]
    if not page["items"]:
        lines.append("(none yet)")
    return "\n".join(lines) + "\n"


async def visible_projects(fable: Fable, caller: Caller) -> list[dict[str, Any]]:
    """The caller's projects (first page of ``list_projects``, A-Z)."""
    page = await fable.dispatcher.call("list_projects", {"limit": 200}, caller)
    return list(page["items"])
