"""The assistant's note features: rewrite a note (or one section) by an instruction into a
draft the user accepts or rejects, tag suggestions, quick capture of one sentence as a note or
task, and project auto-summaries (used by ``search_projects``).

Drafts live in ``note_drafts``, one per user and note, with the note version they were written
against: accepting a draft of a note that changed since is a conflict, never a silent overwrite.
Changes go through the knowledge tools, called through the dispatcher (``ctx.call``), so a draft
or a capture obeys exactly the rules a direct call would. The tools that wait on the model run
in phases: no database connection is held while it writes, and each user has a fair share of
it (:mod:`.gate`). The model's answers are read through :mod:`.answers`: tags that are phrases
are refused, a capture whose answer is not a note or task saves nothing until the caller says
"plain note", and an empty or echoed summary is not stored.

``assist_note`` is a streaming tool: the model's words come as ``token`` progress (MCP progress
notifications, SSE on REST's ``/notes/{id}/assist/stream``), and the draft is saved only once
the model has finished, so an answer cut short (the client went away) leaves nothing.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.assistant.answers import cut, json_object_from, summary_from, tags_from, title_from
from fable_core.assistant.gate import model_for
from fable_core.assistant.providers import Provider
from fable_core.db.models import Note, NoteDraft, Project
from fable_core.errors import Conflict, InvalidInput, NeedsConfirmation, NotFound
from fable_core.knowledge.sections import find_section, outline
from fable_core.knowledge.types import NoteId
from fable_core.knowledge.views import NoteSummary
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import get_visible, owned_by, reach_of, readable
from fable_core.tools.caller import Caller
from fable_core.tools.results import Deleted

__all__ = ["Rewrite", "assist_messages", "keep_draft", "llm", "plan_rewrite"]

_log = logging.getLogger(__name__)

Instruction = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)]
SectionName = Annotated[str | None, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)]
_ASSIST = ("You edit notes. Rewrite the text below following the instruction. Answer with the new "
           "markdown text only: no preamble, no code fences, keep the user's language.")
_TAGS = ("Suggest up to {n} short tags for this note, preferring the user's existing tags when they "
         "fit. Answer with the tags only, comma-separated, lower case; '/' makes a hierarchy.")
_CAPTURE = ("Turn the user's sentence into one note or task. Today is {today}. Answer with JSON only: "
            '{{"kind": "task" or "note", "title": short title, "body": details or "", '
            '"due_date": "YYYY-MM-DD" or null, "priority": "low"/"medium"/"high" or null, "tags": []}}')
_SUMMARY = ("Summarise this project in at most 80 words: what it is about, its goal and its current "
            "state. Plain prose, no lists.")


def llm(ctx: Context) -> Provider:
    """The model, as this caller may use it (their share of it: :mod:`.gate`)."""
    return model_for(ctx.runtime, ctx.caller)


# --- drafts ------------------------------------------------------------------------------------


class DraftView(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    note_id: int
    instruction: str
    section: str | None = None
    content: str
    status: Literal["generating", "ready", "error"]
    base_version: int = Field(description="The note version the draft was written against.")
    original: str = Field("", description="The text the draft replaces (whole body or the section).")


def target_text(note: Note, section: str | None) -> str:
    if section is None:
        return note.body
    found = find_section(note.body, section)
    if found is None:
        names = [s.title for s in outline(note.body)]
        raise InvalidInput(f"note {note.id} has no section {section!r}; its sections: {names}",
                           field="section", sections=names)
    return note.body[found.content_start:found.end]


def assist_messages(note: Note, instruction: str, section: str | None) -> list[dict[str, Any]]:
    where = f"the section {section!r} of" if section else "the whole of"
    return [{"role": "system", "content": _ASSIST},
            {"role": "user", "content": f"Instruction: {instruction}\n\nThis is {where} the note "
                                        f"[[{note.title}]]:\n\n{target_text(note, section)}"}]


@dataclass(frozen=True, slots=True)
class Rewrite:
    """A rewrite the caller may ask for: the prompt for the model and what its draft records.

    Plain data, so a stream can build it in one short read and save the draft in a
    transaction of its own, holding no database connection while the model writes."""

    note_id: int
    instruction: str
    section: str | None
    base_version: int
    original: str
    messages: list[dict[str, Any]]


async def plan_rewrite(session: AsyncSession, caller: Caller, note_id: int, instruction: str,
                       section: str | None) -> Rewrite:
    """Check that the caller may edit the note (and that the section exists) and build the prompt."""
    note = await get_visible(session, Note, note_id, caller, need="editor")
    return Rewrite(note.id, instruction, section, note.version, target_text(note, section),
                   assist_messages(note, instruction, section))


async def keep_draft(session: AsyncSession, caller: Caller, rewrite: Rewrite, text: str) -> DraftView:
    """Save the model's answer as the caller's draft of the note (replacing an older one),
    against the version the prompt was built from. The note is looked up again: a stream
    saves after the model has finished, and the note may have gone meanwhile (NotFound)."""
    await get_visible(session, Note, rewrite.note_id, caller)
    values = {"user_id": caller.user_id, "note_id": rewrite.note_id, "instruction": rewrite.instruction,
              "section": rewrite.section, "content": text.strip(), "status": "ready",
              "base_version": rewrite.base_version}
    stmt = insert(NoteDraft).values(**values).on_conflict_do_update(
        constraint="uq_note_drafts_user_note",
        set_={**{k: v for k, v in values.items() if k not in ("user_id", "note_id")}, "updated_at": func.now()})
    draft = (await session.execute(stmt.returning(NoteDraft))).scalar_one()
    return DraftView(**_draft_fields(draft), original=rewrite.original)


@tool(group="writing", title="Rewrite a note with the assistant", scope="write", stream=True, needs=("llm",),
      route=Route("POST", "/notes/{note_id}/assist"))
async def assist_note(
    ctx: Context, note_id: NoteId, instruction: Instruction, section: SectionName = None
) -> DraftView:
    """Rewrite a note, or one section of it, following an instruction ("make it shorter",
    "turn into a checklist"). The result is kept as a draft: accept it with accept_note_draft
    or drop it with reject_note_draft; the note itself is unchanged until then."""
    async with ctx.reading() as session:
        rewrite = await plan_rewrite(session, ctx.caller, note_id, instruction, section)
    parts: list[str] = []
    async for chunk in llm(ctx).chat_stream(rewrite.messages):
        if chunk.text:
            parts.append(chunk.text)
            await ctx.progress("token", {"text": chunk.text})
    async with ctx.transaction() as session:  # only once the model has finished: a stream cut short keeps nothing
        return await keep_draft(session, ctx.caller, rewrite, "".join(parts))


def _draft_fields(draft: NoteDraft) -> dict[str, Any]:
    return {k: getattr(draft, k) for k in ("note_id", "instruction", "section", "content", "status", "base_version")}


async def _draft(ctx: Context, note_id: int) -> tuple[Note, NoteDraft]:
    note = await get_visible(ctx.session, Note, note_id, ctx.caller)
    draft = await ctx.session.scalar(select(NoteDraft).where(
        NoteDraft.note_id == note_id, owned_by(NoteDraft, ctx.caller)))
    if draft is None:
        raise NotFound(f"note {note_id} has no draft", note_id=note_id)
    return note, draft


@tool(group="writing", title="Read a note's draft", scope="read", route=Route("GET", "/notes/{note_id}/draft"))
async def get_note_draft(ctx: Context, note_id: NoteId) -> DraftView:
    """The assistant's pending rewrite of a note, with the text it would replace."""
    note, draft = await _draft(ctx, note_id)
    found = draft.section is None or find_section(note.body, draft.section)
    original = target_text(note, draft.section) if found else ""
    return DraftView(**_draft_fields(draft), original=original)


@tool(group="writing", title="Accept a note's draft", scope="write",
      route=Route("POST", "/notes/{note_id}/draft/accept"))
async def accept_note_draft(ctx: Context, note_id: NoteId) -> NoteSummary:
    """Apply the assistant's draft to the note (keeping a version) and drop the draft. Refused
    with a conflict when the note changed after the draft was written."""
    note, draft = await _draft(ctx, note_id)
    if draft.status != "ready":
        raise Conflict(f"the draft of note {note_id} is {draft.status}, not ready", status=draft.status)
    if note.version != draft.base_version:
        raise Conflict(f"note {note_id} changed since the draft was written (version {draft.base_version} "
                       f"→ {note.version}); ask for a new draft", note_id=note_id, version=note.version)
    if draft.section is None:
        result = await ctx.call("update_note", {"note_id": note_id, "body": draft.content,
                                                "expected_version": draft.base_version})
    else:
        result = await ctx.call("edit_note", {"note_id": note_id, "operation": "replace_section",
                                              "section": draft.section, "text": draft.content,
                                              "expected_version": draft.base_version})
    await ctx.session.execute(delete(NoteDraft).where(NoteDraft.id == draft.id))
    return NoteSummary.model_validate(result, from_attributes=True)


@tool(group="writing", title="Reject a note's draft", scope="write", idempotent=True,
      route=Route("DELETE", "/notes/{note_id}/draft"))
async def reject_note_draft(ctx: Context, note_id: NoteId) -> Deleted:
    """Drop the assistant's draft of a note; the note stays as it is."""
    _, draft = await _draft(ctx, note_id)
    await ctx.session.execute(delete(NoteDraft).where(NoteDraft.id == draft.id))
    return Deleted(id=note_id)


# --- tags, capture ------------------------------------------------------------------------------


class TagSuggestions(BaseModel):
    tags: list[str]
    reason: str = Field("", description="Why there are no tags, when there are none: the model suggested "
                                         "none, only phrases or the instruction read back, or only tags "
                                         "the note has.")


@tool(group="writing", title="Suggest tags", scope="read", transaction="phases", needs=("llm",),
      route=Route("POST", "/assist/suggest-tags"))
async def suggest_tags(
    ctx: Context,
    note_id: NoteId | None = None,
    text: Annotated[str | None, StringConstraints(max_length=50_000)] = None,
    limit: Annotated[int, Field(ge=1, le=10)] = 5,
) -> TagSuggestions:
    """Suggest tags for a note (by id) or for a text not saved yet; the caller's existing tags are
    preferred. Tags the note has, and phrases that are no tags, are left out; with none left,
    `reason` says why."""
    if (note_id is None) == (text is None):
        raise InvalidInput("pass note_id or text, not both or neither", field="note_id")
    have: list[str] = []
    async with ctx.reading() as session:
        if note_id is not None:
            note = await get_visible(session, Note, note_id, ctx.caller)
            text, have = f"{note.title}\n\n{note.body}", list(note.tags)
        tag = func.unnest(Note.tags).label("tag")
        inner = select(tag).where(readable(Note, await reach_of(session, ctx.caller))).subquery()
        existing = list((await session.execute(
            select(inner.c.tag).group_by(inner.c.tag).order_by(func.count().desc()).limit(100))).scalars())
    instruction = _TAGS.format(n=limit)
    answer = await llm(ctx).complete([
        {"role": "system", "content": instruction},
        {"role": "user",
         "content": f"Existing tags: {', '.join(existing) or '(none)'}\n\nNote:\n{(text or '')[:8000]}"},
    ], max_tokens=60)
    found = tags_from(answer, f"{instruction}\nExisting tags: (none)\nNote:", keep=existing, skip=have)
    return TagSuggestions(tags=found.tags[:limit], reason=found.reason())


@tool(group="writing", title="Quick capture", scope="write", transaction="phases", needs=("llm",),
      route=Route("POST", "/assist/capture"))
async def quick_capture(
    ctx: Context,
    text: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)],
    plain: bool = False,
) -> NoteSummary:
    """Turn one sentence ("call the bank friday, high priority") into a task or note with its
    fields filled in: title, due date, priority, tags. If the model's answer is no note or task,
    nothing is saved: needs_confirmation, whose `confirm_arguments` save a plain note.

    Args:
        plain: Save the text as a plain note without asking the model: its first sentence is
            the title, the rest the body.
    """
    if plain:
        return NoteSummary.model_validate(await ctx.call("create_note", plain_note(text)), from_attributes=True)
    answer = await llm(ctx).complete([
        {"role": "system", "content": _CAPTURE.format(today=(await ctx.today()).isoformat())},
        {"role": "user", "content": text},
    ], max_tokens=300)
    fields = _capture_fields(answer, text)
    if fields is None:
        raise NeedsConfirmation(
            f"the model's answer could not be read as a note or task ({_shown(answer)}); nothing was saved. "
            "Repeat quick_capture with plain=true to save the text as a plain note",
            requires_confirmation=True, answer=answer.strip()[:500], fallback=plain_note(text),
            confirm_arguments={"text": text, "plain": True})
    try:
        created = await ctx.call("create_note", fields)
    except InvalidInput:  # a field the model got wrong: keep the sentence, drop the extras
        kept = {"title": fields["title"], "body": fields.get("body", "")}
        if fields.get("status"):
            kept["status"] = "todo"
        created = await ctx.call("create_note", kept)
    return NoteSummary.model_validate(created, from_attributes=True)


PLAIN_TITLE = 120


def plain_note(text: str) -> dict[str, str]:
    """The note ``quick_capture`` saves with ``plain``: the first sentence (or line) as its
    title and the rest as its body; a first sentence over 120 characters is cut at a word for
    the title, and the body keeps the whole text."""
    text = text.strip()
    first, *rest = re.split(r"(?<=[.!?])\s+|\s*\n\s*", text, maxsplit=1)
    if len(first) <= PLAIN_TITLE:
        return {"title": first, "body": " ".join(rest)}
    return {"title": cut(first, words=PLAIN_TITLE, chars=PLAIN_TITLE - 1) + "…", "body": text}


def _shown(answer: str) -> str:
    answer = " ".join(answer.split())
    return repr(answer if len(answer) <= 80 else answer[:79] + "…") if answer else "an empty answer"


def _capture_fields(answer: str, text: str) -> dict[str, Any] | None:
    """The create_note arguments the model's answer describes, or None when it describes no
    note or task (no JSON object, or one with neither a kind nor a title)."""
    data = json_object_from(answer)
    if data is None:
        return None
    title = title_from(str(data.get("title") or ""))
    if not title and data.get("kind") not in ("task", "note"):
        return None
    fields: dict[str, Any] = {"title": title or cut(text), "body": str(data.get("body") or "").strip()}
    if not title and not fields["body"] and fields["title"] != text:
        fields["body"] = text  # the title is the sentence cut short: keep all of it
    if data.get("kind") == "task":
        fields["status"] = "todo"
    for key in ("due_date", "priority"):
        if data.get(key):
            fields[key] = data[key]
    if isinstance(data.get("tags"), list):
        fields["tags"] = tags_from(",".join(map(str, data["tags"])), _CAPTURE).tags[:10]
    return fields


# --- project summaries ---------------------------------------------------------------------------


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
    """Write the project's automatic summary from its description, goal and newest notes (used
    by search_projects to match projects by what they contain). An empty or echoed answer is
    not stored: `updated` is false, `reason` says why."""
    async with ctx.reading() as session:
        project = await get_visible(session, Project, project_id, ctx.caller, need="editor")
        notes = (await session.execute(
            select(Note.title, Note.body).where(Note.project_id == project_id,
                                                readable(Note, await reach_of(session, ctx.caller)))
            .order_by(Note.updated_at.desc()).limit(15))).all()
    listing = "\n".join(f"- {t}: {b[:200]}" for t, b in notes)
    prompt = (f"Project: {project.title}\nDescription: {project.description}\n"
              f"Goal: {project.goal}\nNotes:\n{listing or '(none)'}")
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
