"""Tags suggested for a note by the model, preferring the user's own: the answer is read as untrusted
(:func:`fable_core.assistant.answers.tags_from`); tags the note has, phrases and the instruction
read back, and the start of the existing-tags list read back (tags the note's words lack), are left
out, with the reason when none is left."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints
from sqlalchemy import func, select

from fable_core.assistant.answers import Tags, tags_from
from fable_core.assistant.note_drafts import llm
from fable_core.db.models import Note
from fable_core.errors import InvalidInput
from fable_core.knowledge.types import NoteId
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import get_visible, reach_of, readable

_TAGS = ("Suggest up to {n} short tags for this note, preferring the user's existing tags when they "
         "fit. Answer with the tags only, comma-separated, lower case; '/' makes a hierarchy.")


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
    """Suggest tags for a note or a text, preferring the caller's existing tags.

    Tags the note has are left out; with none left, `reason` says why."""
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
    _unecho(found, [t for t in existing if t not in have], text or "")
    return TagSuggestions(tags=found.tags[:limit], reason=found.reason())


def _unecho(found: Tags, listed: list[str], text: str) -> None:
    """A small model answers with the start of the "Existing tags:" list it was shown, in order
    (``home, travel, car`` for a lentil soup recipe): such an answer keeps only the tags whose
    words the note has; the others are refused as the list read back."""
    n = len(found.tags)
    if n < 2 or found.tags != listed[:n]:
        return
    words = set(re.findall(r"\w+", text.casefold()))
    for tag in list(found.tags):
        if not set(re.findall(r"\w+", tag.casefold())) <= words:
            found.tags.remove(tag)
            found.refused[tag] = "the list of existing tags read back"
