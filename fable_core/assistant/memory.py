"""Memory of long chats: summarise the old part, keep the recent part verbatim; titles.

Once more than 30 messages follow the last summary, everything but the 8 newest is folded into
the conversation's summary (at most 400 tokens, built on the previous summary), stored on the
conversation with the id of the last message it covers. The model then sees: the summary, and
the messages after it.

Summaries are written *after* an answer, never before one: the next answer must not wait for a
model call it does not need yet (a turn just past the threshold simply sends its few extra
messages). Only a conversation far behind (more than 60 messages since the summary: the model
was down, or messages were imported) is summarised before answering, to keep the prompt
bounded. Two summaries racing (a quick follow-up while the last one is still being written)
cannot mix: a summary is stored only if the summary it was built on is still the current one.
A title is generated after the first exchange and refreshed every 10th message; a model's
title is cleaned and cut to a few words, and one that holds nothing usable falls back to the
first words of the user's first message (or, at a refresh, leaves the title as it is).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import update

from fable_core.assistant.answers import cut, drawn_from, echoes, title_from
from fable_core.assistant.gate import background
from fable_core.assistant.providers.base import Provider
from fable_core.db.database import Database, rowcount
from fable_core.db.models import Conversation

__all__ = ["KEEP_RECENT", "SUMMARY_AFTER", "SUMMARY_BEFORE", "Past", "make_title", "prompt", "summarise",
           "summary_due", "wants_title"]

SUMMARY_AFTER = 30
SUMMARY_BEFORE = 2 * SUMMARY_AFTER
KEEP_RECENT = 8
SUMMARY_TOKENS = 400
TITLE_EVERY = 10
_SUMMARY_PROMPT = (
    "Summarise the conversation so far for your own memory, in at most 300 words: facts about the "
    "user, decisions, open questions, anything you promised. Build on the earlier summary if any."
)
_TITLE_PROMPT = (
    "Give this conversation a short title (at most 6 words). Answer with the title only, "
    "no quotes, no punctuation at the end."
)


class Past(NamedTuple):
    """A stored message the model may see again."""

    id: int
    role: str
    content: str


def prompt(summary: str | None, rows: Sequence[Past]) -> list[dict[str, Any]]:
    """The messages the model sees before the new turn: the summary, then ``rows``."""
    messages = [{"role": r.role, "content": r.content} for r in rows if r.content]
    if summary:
        messages.insert(0, {"role": "system", "content": f"Summary of the earlier conversation:\n{summary}"})
    return messages


def summary_due(rows: Sequence[Past], *, before_answer: bool = False) -> bool:
    """Whether ``rows`` (the messages after the summary) should be folded into it now."""
    return len(rows) > (SUMMARY_BEFORE if before_answer else SUMMARY_AFTER)


async def summarise(db: Database, provider: Provider, conversation: Conversation,
                    rows: Sequence[Past]) -> list[Past]:
    """Fold all but the newest rows into ``conversation``'s summary and store it (unless another
    summary was stored meanwhile); returns the rows the summary leaves out."""
    older, recent = list(rows[:-KEEP_RECENT]), list(rows[-KEEP_RECENT:])
    if not older:
        return recent
    summary = await _summarise(provider, conversation.summary, older)
    async with db.transaction() as s:
        stored = await s.execute(
            update(Conversation)
            .where(Conversation.id == conversation.id,
                   Conversation.summary_message_id.is_not_distinct_from(conversation.summary_message_id))
            .values(summary=summary, summary_message_id=older[-1].id))
    if rowcount(stored):
        conversation.summary, conversation.summary_message_id = summary, older[-1].id
    return recent


async def _summarise(provider: Provider, previous: str | None, rows: Sequence[Past]) -> str:
    transcript = "\n".join(f"{r.role}: {r.content[:2000]}" for r in rows)
    earlier = f"Earlier summary:\n{previous}\n\n" if previous else ""
    with background():  # behind what a user waits for
        text = await provider.complete([
            {"role": "system", "content": _SUMMARY_PROMPT},
            {"role": "user", "content": f"{earlier}Conversation:\n{transcript}"},
        ], max_tokens=SUMMARY_TOKENS)
    return _cap_tokens(text.strip(), SUMMARY_TOKENS)


def _cap_tokens(text: str, tokens: int) -> str:
    """At most ``tokens`` tokens, estimated as words × 4/3 (no tokenizer needed)."""
    words = text.split()
    limit = tokens * 3 // 4
    return text if len(words) <= limit else " ".join(words[:limit]) + " …"


def wants_title(message_count: int) -> bool:
    """After the first exchange (2 messages), then every 10th message."""
    return message_count == 2 or (message_count > 2 and message_count % TITLE_EVERY == 0)


async def make_title(provider: Provider, messages: list[dict[str, Any]], fallback: str = "",
                     system: dict[str, Any] | None = None) -> str:
    """The model's title for the conversation, cleaned and cut (:func:`.answers.title_from`);
    when its answer holds none (empty, only markup, the instruction read back, words the
    conversation does not have: :func:`.answers.drawn_from`), ``fallback``
    cut the same way, and ``""`` (keep the title as it is) without one.

    Given the chat's ``system`` message as its turn sent it, the request starts with it: a
    server keeps the last prompt it read, and a title asked between two turns with a prompt of
    its own made the next turn read the whole system prompt and tools again (minutes for a
    small model on a CPU)."""
    transcript = "\n".join(f"{m['role']}: {m['content'][:500]}" for m in messages[-10:])
    ask = ([{"role": "system", "content": _TITLE_PROMPT}, {"role": "user", "content": transcript}] if system is None
           else [system, {"role": "user", "content": f"{transcript}\n\n{_TITLE_PROMPT}"}])
    with background():
        answer = await provider.complete(ask, max_tokens=24)
    title = title_from(answer)
    drawn = title and not echoes(title, _TITLE_PROMPT) and drawn_from(title, transcript)
    return title if drawn else cut(fallback)
