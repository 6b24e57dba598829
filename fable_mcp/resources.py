"""Notes and projects as MCP resources: ``fable://notes/{id}`` and ``fable://projects/{id}``.

Listing pages through all of the caller's projects, then all their notes, newest first, with
an opaque ``nextCursor`` (keyset, :func:`fable_core.knowledge.lookups.resource_rows`); templates name the
same URIs. Notes are read through the ``read_note`` tool (so access rules hold); a project
reads as ``get_project`` plus its notes, listed by ``list_notes``.
"""

from __future__ import annotations

import re
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from fable_core.errors import InvalidInput
from fable_core.knowledge.lookups import Section, resource_rows
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.paging import decode_cursor, encode_cursor
from fable_mcp.errors import RESOURCE_NOT_FOUND

__all__ = [
    "NOTE_TEMPLATE",
    "PAGE_SIZE",
    "PROJECT_TEMPLATE",
    "list_resources",
    "list_templates",
    "note_uri",
    "project_uri",
    "read_resource",
]

NOTE_TEMPLATE = "fable://notes/{id}"
PROJECT_TEMPLATE = "fable://projects/{id}"
PAGE_SIZE = 50
_CURSOR_KIND = "mcp:resources"
_MAX_ID = 2**31 - 1  # ids are PostgreSQL integers
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


async def list_resources(
    fable: Fable, caller: Caller, cursor: str | None = None
) -> types.ListResourcesResult:
    """One page: projects first, then notes, each newest first; ``nextCursor`` while more remain.

    A walk lists everything that existed when it began exactly once; what is created during it
    sorts before the cursor and waits for the next walk. A cursor that is not one of ours is
    invalid input (-32602).
    """
    section, before = _position(cursor)
    rows = await resource_rows(fable, caller, section, before, PAGE_SIZE + 1)
    page = rows[:PAGE_SIZE]
    next_cursor = None
    if len(rows) > PAGE_SIZE:
        last_section, last = page[-1]
        next_cursor = encode_cursor(_CURSOR_KIND, [last_section, last["id"]])
    return types.ListResourcesResult(resources=[_resource(kind, row) for kind, row in page],
                                     next_cursor=next_cursor)


def _position(cursor: str | None) -> tuple[Section, int | None]:
    """Where a page starts: after ``(section, id)``, or at the first project."""
    if cursor is None:
        return "projects", None
    match decode_cursor(cursor, _CURSOR_KIND):
        case ["projects" | "notes" as section, int(row_id)] if type(row_id) is int and 0 < row_id <= _MAX_ID:
            return section, row_id
    raise InvalidInput("cursor is not valid for this listing; pass nextCursor from resources/list "
                       "unchanged", field="cursor")


def _resource(section: Section, row: dict[str, Any]) -> types.Resource:
    if section == "projects":
        return types.Resource(uri=project_uri(row["id"]), name=row["title"], title=row["title"],
                              mime_type=MARKDOWN, description=f"project {row['id']} · {row['status']}")
    return types.Resource(uri=note_uri(row["id"]), name=row["title"], title=row["title"], mime_type=MARKDOWN,
                          description=_note_line(row))


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
    parts += [f"{field.replace('_id', '').replace('_', ' ')}: {note[field]}"
              for field in ("status", "priority", "due_date", "project_id") if note.get(field) not in (None, "none")]
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
