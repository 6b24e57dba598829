"""Quick capture: one sentence ("call the bank friday, high priority") becomes a task or a note with
its fields filled in by the model; an answer that is no note or task saves nothing and offers a
plain note instead."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import StringConstraints

from fable_core.assistant.answers import cut, json_object_from, tags_from, title_from
from fable_core.assistant.note_drafts import llm
from fable_core.assistant.today import today_line
from fable_core.errors import InvalidInput, NeedsConfirmation
from fable_core.knowledge.quickadd import parse_quick
from fable_core.knowledge.views import NoteSummary
from fable_core.tools import Context, Route, tool

_CAPTURE = ("Turn the user's sentence into one note or task. Today is {today}. Answer with JSON only: "
            '{{"kind": "task" or "note", "title": short title, "body": details or "", '
            '"due_date": "YYYY-MM-DD" or null, "priority": "low"/"medium"/"high" or null, "tags": []}}')


@tool(group="writing", title="Quick capture", scope="write", transaction="phases", needs=("llm",),
      route=Route("POST", "/assist/capture"))
async def quick_capture(
    ctx: Context,
    text: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)],
    plain: bool = False,
) -> NoteSummary:
    """Turn a sentence ("call the bank friday, high priority") into a task or note.

    The model fills in title, priority and tags; dates ("friday", "on the 15th") are read by
    Fable's quick-add parser, never guessed. If its answer is no note or task,
    nothing is saved: needs_confirmation, whose `confirm_arguments` save a plain note.

    Args:
        plain: Skip the model: first sentence as title, the rest as body.
    """
    if plain:
        return NoteSummary.model_validate(await ctx.call("create_note", plain_note(text)), from_attributes=True)
    today = await ctx.today()
    read = parse_quick(text, today)  # dates are Fable's to read, never the model's: "on Friday" is no guess
    sentence = _without(text, read.when_words) if read.due_date else text
    answer = await llm(ctx).complete([
        {"role": "system", "content": _CAPTURE.format(today=today_line(today, await ctx.timezone()))},
        {"role": "user", "content": sentence},
    ], max_tokens=300)
    fields = _capture_fields(answer, sentence)
    if fields is not None and read.due_date is not None:  # a dated capture is a task, due when the words say
        fields.update(due_date=read.due_date.isoformat(), status="todo")
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


def _without(text: str, phrases: list[str]) -> str:
    """``text`` without the date and time ``phrases`` the parser read (once each): the model
    never sees them, so they neither end up in the title nor get re-read wrongly."""
    for phrase in phrases:
        text = re.sub(r"\s*" + r"\s+".join(map(re.escape, phrase.split())) + r"\b", "", text, count=1,
                      flags=re.IGNORECASE)
    return " ".join(text.split()).strip(" ,;-") or text


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
