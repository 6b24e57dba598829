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

from fable_core.assistant.gate import model_for
from fable_core.assistant.providers import Provider
from fable_core.db.models import Note, NoteDraft
from fable_core.errors import Conflict, InvalidInput, NotFound
from fable_core.knowledge.sections import find_section, outline
from fable_core.knowledge.types import NoteId
from fable_core.knowledge.views import NoteSummary
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import get_visible, owned_by
from fable_core.tools.caller import Caller
from fable_core.tools.results import Deleted, absent_when_none

__all__ = ["Rewrite", "assist_messages", "keep_draft", "llm", "plan_rewrite"]

_log = logging.getLogger(__name__)
_WORD = re.compile(r"[^\W_]+")
DROPPED = 0.3  # a draft leaving out more of the original's words than this says so
SHARE_SCAN = 50_000  # characters of the original read for it: a note page asks for its draft on every load

Instruction = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)]
SectionName = Annotated[str | None, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)]
_ASSIST = ("You edit notes. Rewrite the text below following the instruction. Answer with the new "
           "markdown text only: no preamble, no code fences, keep the user's language.")


def llm(ctx: Context) -> Provider:
    """The model, as this caller may use it (their share of it: :mod:`.gate`)."""
    return model_for(ctx.runtime, ctx.caller)


# --- drafts ------------------------------------------------------------------------------------


class DraftView(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    note_id: int
    status: Literal["none", "generating", "ready", "error"] = Field(description="none: the note has no draft.")
    instruction: str | None = absent_when_none()
    section: str | None = absent_when_none("The heading whose section it rewrites; absent: the whole note.")
    content: str | None = absent_when_none()
    base_version: int | None = absent_when_none("The note version the draft was written against.")
    original: str | None = absent_when_none("The text the draft replaces (whole body or the section).")
    dropped: float | None = absent_when_none(
        f"Share of the original's words the draft leaves out, when over {DROPPED:g}: check what went.")


def dropped_share(original: str, draft: str) -> float | None:
    """The share of ``original``'s distinct words (of 3 letters or more, in its first
    :data:`SHARE_SCAN` characters) that ``draft`` does not have, rounded, when over
    :data:`DROPPED` (None otherwise): a small model drops content silently, and a shorter text
    should say what it left out."""
    words = {w for w in _WORD.findall(original[:SHARE_SCAN].casefold()) if len(w) >= 3}
    if not words:
        return None
    share = len(words - set(_WORD.findall(draft[:2 * SHARE_SCAN].casefold()))) / len(words)
    return round(share, 2) if share > DROPPED else None


def without_prompt(text: str, messages: list[dict[str, Any]], original: str) -> str:
    """The model's draft without lines that are the prompt's own framing read back ("Instruction:
    …", "This is the whole of the note [[…]]:"), which a small model copies into the note. Only
    the framing counts: a line of the note itself that the draft keeps stays."""
    prompt = "\n".join(str(m["content"]) for m in messages)
    framing = {_plain(line) for line in prompt.removesuffix(original).splitlines()} - {""}
    return "\n".join(line for line in text.splitlines() if _plain(line) not in framing).strip()


def _plain(line: str) -> str:
    return " ".join(_WORD.findall(line.casefold()))


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
              "section": rewrite.section, "content": without_prompt(text, rewrite.messages, rewrite.original),
              "status": "ready",
              "base_version": rewrite.base_version}
    stmt = insert(NoteDraft).values(**values).on_conflict_do_update(
        constraint="uq_note_drafts_user_note",
        set_={**{k: v for k, v in values.items() if k not in ("user_id", "note_id")}, "updated_at": func.now()})
    draft = (await session.execute(stmt.returning(NoteDraft))).scalar_one()
    return DraftView(**_draft_fields(draft), original=rewrite.original,
                     dropped=dropped_share(rewrite.original, draft.content))


@tool(group="writing", title="Rewrite a note with the assistant", scope="write", stream=True, needs=("llm",),
      route=Route("POST", "/notes/{note_id}/assist"))
async def assist_note(
    ctx: Context, note_id: NoteId, instruction: Instruction, section: SectionName = None
) -> DraftView:
    """Rewrite a note, or one section, following an instruction ("make it shorter").

    The result is a draft for accept_note_draft or reject_note_draft; the note is unchanged until
    then."""
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


async def _find_draft(ctx: Context, note_id: int) -> tuple[Note, NoteDraft | None]:
    note = await get_visible(ctx.session, Note, note_id, ctx.caller)
    return note, await ctx.session.scalar(select(NoteDraft).where(
        NoteDraft.note_id == note_id, owned_by(NoteDraft, ctx.caller)))


async def _draft(ctx: Context, note_id: int) -> tuple[Note, NoteDraft]:
    note, draft = await _find_draft(ctx, note_id)
    if draft is None:
        raise NotFound(f"note {note_id} has no draft", note_id=note_id)
    return note, draft


@tool(group="writing", title="Read a note's draft", scope="read", route=Route("GET", "/notes/{note_id}/draft"))
async def get_note_draft(ctx: Context, note_id: NoteId) -> DraftView:
    """The assistant's pending rewrite of a note, with the text it would replace (status none: no draft)."""
    note, draft = await _find_draft(ctx, note_id)
    if draft is None:  # a note without a draft is no error: most notes have none
        return DraftView(note_id=note_id, status="none")
    found = draft.section is None or find_section(note.body, draft.section)
    original = target_text(note, draft.section) if found else ""
    return DraftView(**_draft_fields(draft), original=original, dropped=dropped_share(original, draft.content or ""))


@tool(group="writing", title="Accept a note's draft", scope="write",
      route=Route("POST", "/notes/{note_id}/draft/accept"))
async def accept_note_draft(ctx: Context, note_id: NoteId) -> NoteSummary:
    """Apply the assistant's draft to the note (keeping a version).

    Conflict if the note changed since the draft was written."""
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


# --- project summaries ---------------------------------------------------------------------------


