"""Memory of long chats: summarise the old part, keep the recent part verbatim; titles.

Once more than 30 messages follow the last summary, everything but the 8 newest is folded into
the conversation's summary (at most 400 tokens, built on the previous summary), stored on the
conversation with the id of the last message it covers. The model then sees: the summary, and
the messages after it. A title is generated after the first exchange and refreshed every 10th
message.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.assistant.providers.base import Provider
from fable_core.db.models import Conversation, Message

__all__ = ["KEEP_RECENT", "SUMMARY_AFTER", "history", "make_title", "wants_title"]

SUMMARY_AFTER = 30
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


async def history(session: AsyncSession, conversation: Conversation, before_id: int,
                  provider: Provider) -> list[dict[str, Any]]:
    """The messages the model sees before the new turn, summarising first when due."""
    after = conversation.summary_message_id or 0
    rows = list((await session.execute(
        select(Message.id, Message.role, Message.content)
        .where(Message.conversation_id == conversation.id, Message.id > after, Message.id < before_id,
               Message.role.in_(("user", "assistant")), Message.status != "generating")
        .order_by(Message.id)
    )).all())
    if len(rows) > SUMMARY_AFTER:
        older, rows = rows[:-KEEP_RECENT], rows[-KEEP_RECENT:]
        summary = await _summarise(provider, conversation.summary, older)
        await session.execute(update(Conversation).where(Conversation.id == conversation.id)
                              .values(summary=summary, summary_message_id=older[-1].id))
        conversation.summary, conversation.summary_message_id = summary, older[-1].id
    messages = [{"role": r.role, "content": r.content} for r in rows if r.content]
    if conversation.summary:
        messages.insert(0, {"role": "system", "content": f"Summary of the earlier conversation:\n{conversation.summary}"})
    return messages


async def _summarise(provider: Provider, previous: str | None, rows: list[Any]) -> str:
    transcript = "\n".join(f"{r.role}: {r.content[:2000]}" for r in rows)
    earlier = f"Earlier summary:\n{previous}\n\n" if previous else ""
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


async def make_title(provider: Provider, messages: list[dict[str, Any]]) -> str:
    transcript = "\n".join(f"{m['role']}: {m['content'][:500]}" for m in messages[-10:])
    title = await provider.complete([
        {"role": "system", "content": _TITLE_PROMPT},
        {"role": "user", "content": transcript},
    ], max_tokens=24)
    title = " ".join(title.strip().strip("\"'").split())
    return (title[:200] or "New conversation").rstrip(".")
