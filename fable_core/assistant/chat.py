"""One chat turn, end to end: store the user's message, then in the background build the
context, recall the conversation (summarising when long), run the tool loop while streaming
into the buffer, store the answer, and retitle the conversation when due.

Events a follower sees: ``context`` (notes used, suggested, attached; URLs), ``token``,
``tool_call``, ``tool_result``, then ``done`` (with ``rag_scope`` when the model changed the
scope) or ``error``.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import date
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, insert, select, update

from fable_core.assistant import memory
from fable_core.assistant.context import build_context
from fable_core.assistant.conversations import load_conversation, message_count, scope_label
from fable_core.assistant.generation import Buffer, MessageWriter, StreamEvent
from fable_core.assistant.providers import NoProvider, unavailable
from fable_core.assistant.toolloop import LoopResult, run_tool_loop
from fable_core.caller import Caller
from fable_core.access import visible_ids
from fable_core.db.models import Conversation, Message, Note
from fable_core.errors import Conflict, FableError, InvalidInput, NotFound

if TYPE_CHECKING:
    from fable_core.assistant.service import Assistant

__all__ = ["MAX_MESSAGE", "chat_key", "send_message", "stop_generation", "stored_reply"]

_log = logging.getLogger(__name__)
MAX_MESSAGE = 20_000
_SYSTEM = (
    "You are Fable's assistant, helping {who} with their notes, tasks and projects. Today is "
    "{today}. Use the tools to look things up and make changes; never invent note contents. "
    "Link notes as [[Title]]. Be brief."
)


def chat_key(conversation_id: int) -> str:
    return f"chat:{conversation_id}"


async def send_message(assistant: Assistant, caller: Caller, conversation_id: int, content: str,
                       note_ids: list[int] | None = None, exclude_note_id: int | None = None) -> dict[str, Any]:
    """Store the user's message and start generating the answer; returns the message ids."""
    if isinstance(assistant.provider, NoProvider):
        raise unavailable("LLM_PROVIDER is none", provider="none")
    content = content.strip()
    if not content:
        raise InvalidInput("the message is empty", field="content")
    if len(content) > MAX_MESSAGE:
        raise InvalidInput(f"the message is longer than {MAX_MESSAGE} characters", field="content")
    key = chat_key(conversation_id)
    async with assistant.db.transaction() as s:
        conversation = await load_conversation(s, caller, conversation_id, for_update=True)
        if assistant.generations.running(key):
            raise Conflict(f"conversation {conversation_id} is still answering; stop it first",
                           conversation_id=conversation_id)
        await _check_notes(s, caller, [*(note_ids or []), *([exclude_note_id] if exclude_note_id else [])])
        user_id = await _add(s, conversation, "user", content, "done")
        message_id = await _add(s, conversation, "assistant", "", "generating")
        await s.execute(update(Conversation).where(Conversation.id == conversation_id).values(
            updated_at=func.now()))
    turn = _Turn(assistant, caller, conversation_id, message_id, content, note_ids or [], exclude_note_id)
    turn.user_message_id = user_id
    assistant.generations.start(key, message_id, turn.run)
    return {"conversation_id": conversation_id, "user_message_id": user_id, "message_id": message_id}


async def _check_notes(s: Any, caller: Caller, note_ids: list[int]) -> None:
    found = await visible_ids(s, Note, note_ids, caller) if note_ids else set()
    for note_id in note_ids:
        if note_id not in found:
            raise NotFound(f"note {note_id} not found", note_id=note_id)


async def _add(s: Any, conversation: Conversation, role: str, content: str, status: str) -> int:
    return int(await s.scalar(insert(Message).values(
        conversation_id=conversation.id, user_id=conversation.user_id, role=role,
        content=content, status=status).returning(Message.id)))


def stop_generation(assistant: Assistant, conversation_id: int) -> bool:
    return assistant.generations.stop(chat_key(conversation_id))


async def stored_reply(assistant: Assistant, caller: Caller, conversation_id: int) -> StreamEvent | None:
    """The last assistant message as one ``message`` event, for followers with no buffer."""
    async with assistant.db.transaction() as s:
        await load_conversation(s, caller, conversation_id)
        row = (await s.execute(
            select(Message).where(Message.conversation_id == conversation_id, Message.role == "assistant")
            .order_by(Message.id.desc()).limit(1))).scalar_one_or_none()
    if row is None:
        return None
    return StreamEvent(f"{row.id}:stored", "message", {
        "message_id": row.id, "content": row.content, "status": row.status,
        "tool_events": row.tool_events or [], "context": row.context})


class _Turn:
    """The background part of one turn."""

    def __init__(self, assistant: Assistant, caller: Caller, conversation_id: int, message_id: int,
                 content: str, note_ids: list[int], exclude_note_id: int | None) -> None:
        self.a = assistant
        self.caller = Caller(user_id=caller.user_id, username=caller.username, scope=caller.scope,
                             surface="assistant", role=caller.role, conversation_id=conversation_id,
                             project_id=caller.project_id)
        self.conversation_id = conversation_id
        self.message_id = message_id
        self.content = content
        self.note_ids = note_ids
        self.exclude_note_id = exclude_note_id
        self.user_message_id = message_id

    async def run(self, buffer: Buffer) -> None:
        writer = MessageWriter(self.a.db, self.message_id, interval=self.a.flush_interval)
        result = LoopResult(tool_events=writer.tool_events)

        async def emit(event: str, data: dict[str, Any]) -> None:
            writer.content = result.text
            buffer.emit(event, data)

        with writer:
            try:
                if buffer.stopped:  # stopped before it started
                    raise asyncio.CancelledError
                before = await self._prepare_and_loop(emit, result, writer)
            except asyncio.CancelledError:
                writer.content = result.text
                await asyncio.shield(writer.flush("stopped" if buffer.stopped else "interrupted"))
                buffer.emit("done", {"message_id": self.message_id, "stopped": True})
                raise
            except FableError as e:
                writer.content = result.text
                await writer.flush("error")
                buffer.emit("error", {"message_id": self.message_id, **e.to_dict()})
                return
        writer.content = result.text
        await writer.flush("done")
        done: dict[str, Any] = {"message_id": self.message_id}
        async with self.a.db.transaction() as s:
            conversation = await load_conversation(s, self.caller, self.conversation_id)
            if conversation.rag_project_id != before:
                done["rag_scope"] = {"rag_project_id": conversation.rag_project_id,
                                     "label": await scope_label(s, self.caller, conversation.rag_project_id)}
        buffer.emit("done", done)
        await self._retitle()

    async def _prepare_and_loop(self, emit: Any, result: LoopResult, writer: MessageWriter) -> int | None:
        a = self.a
        async with a.db.transaction() as s:
            conversation = await load_conversation(s, self.caller, self.conversation_id)
            pack = await build_context(
                s, self.caller, self.content, rag_project_id=conversation.rag_project_id,
                note_ids=self.note_ids, exclude_note_id=self.exclude_note_id, embedder=a.embedder,
                provider=a.provider, fetch_allow=a.fetch_allow)
            past = await memory.history(s, conversation, self.user_message_id, a.provider)
            await s.execute(update(Message).where(Message.id == self.message_id).values(context=pack.meta()))
        await emit("context", pack.meta())
        system = _SYSTEM.format(who=self.caller.username or "the user", today=date.today().isoformat())
        if pack.blocks:
            system += "\n\nContext:\n\n" + "\n\n---\n\n".join(pack.blocks)
        messages = [{"role": "system", "content": system}, *past, {"role": "user", "content": self.content}]
        await run_tool_loop(a.provider, a.dispatcher, self.caller, messages, emit, result)
        return conversation.rag_project_id

    async def _retitle(self) -> None:
        try:
            async with self.a.db.transaction() as s:
                count = await message_count(s, self.conversation_id)
                if not memory.wants_title(count):
                    return
                rows = (await s.execute(select(Message.role, Message.content).where(
                    Message.conversation_id == self.conversation_id).order_by(Message.id))).all()
            title = await memory.make_title(self.a.provider, [{"role": r, "content": c} for r, c in rows])
            async with self.a.db.transaction() as s:
                await s.execute(update(Conversation).where(Conversation.id == self.conversation_id)
                                .values(title=title))
        except (FableError, NotFound) as e:
            _log.info("could not title conversation %s: %s", self.conversation_id, e)
