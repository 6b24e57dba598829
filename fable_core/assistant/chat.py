"""One chat turn, end to end: store the user's message (recalling the conversation in the same
statement), then in the background build the context, run the tool loop while streaming into the
buffer, store the answer, and — once followers have their answer — retitle and summarise the
conversation when due.

Everything before the first token is on the user's clock, so it is kept to what the answer
needs: one statement stores both messages and reads the history while the message is being
embedded; one query retrieves the context once the embedding is back; model calls that are not
about this answer (title, summary) run after it.

Events a follower sees: ``context`` (notes used, suggested, attached; URLs), ``token``,
``tool_call``, ``tool_result``, then ``done`` (with ``rag_scope`` when the model changed the
scope) or ``error``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from sqlalchemy import select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from fable_core.assistant import memory
from fable_core.assistant.away import tell_away
from fable_core.assistant.context import ContextPack, add_urls, build_context
from fable_core.assistant.conversations import check_conversation, load_conversation, scope_label
from fable_core.assistant.memory import Past
from fable_core.assistant.providers import NoProvider, StreamCut, unavailable
from fable_core.assistant.today import today_line
from fable_core.assistant.toolloop import LoopResult, run_tool_loop
from fable_core.assistant.toolprompt import tool_mode
from fable_core.db.database import Database
from fable_core.db.models import Conversation, Message, Note
from fable_core.errors import Conflict, FableError, InvalidInput, NotFound
from fable_core.infra.generations import Buffer, MessageWriter, StreamEvent, parse_event_id
from fable_core.people.preferences.personal import ASSISTANT_NAME, DEFAULT_MODEL
from fable_core.people.profile.prompt import profile_prompt
from fable_core.tools.access import owner_sql, visible_ids
from fable_core.tools.caller import Caller
from fable_core.tools.clock import TIMEZONE, today_in
from fable_core.tools.dispatcher import InternalError
from fable_core.tools.preferences import read_settings

if TYPE_CHECKING:
    from fable_core.assistant.service import Assistant

__all__ = ["MAX_MESSAGE", "chat_key", "resend_message", "retry_message", "send_message", "stop_generation",
           "stored_reply"]

_log = logging.getLogger(__name__)
MAX_MESSAGE = 20_000
_SYSTEM = (
    "You are {me}, helping {who} with their notes, tasks and projects. Today is "
    "{today}. Use the tools to look things up and make changes; never invent note contents. "
    "Link notes as [[Title]]. Be brief."
)
_CONTEXT = "Context for this message:\n\n{blocks}\n\n---\n\n{message}"
_JOURNAL = (
    "\n\nThis conversation is {who}'s daily journal for {day}: they write about their day, plans "
    "and thoughts; listen, reflect briefly, and help with what they ask."
)


def chat_key(conversation_id: int) -> str:
    return f"chat:{conversation_id}"


async def send_message(assistant: Assistant, caller: Caller, conversation_id: int, content: str,
                       note_ids: list[int] | None = None, exclude_note_id: int | None = None, *,
                       reserved: bool = False) -> dict[str, Any]:
    """Store the user's message and start generating the answer; returns the message ids.

    The message's embedding (for retrieval) is requested while the messages are being stored,
    so the model's first token waits for one of the two, not both."""
    if isinstance(assistant.provider, NoProvider):
        async with autocommit(assistant.db) as conn:  # a stranger's rows are not found, model or not
            await check_conversation(conn, caller, conversation_id)
            await _check_notes(conn, caller, [*(note_ids or []), *([exclude_note_id] if exclude_note_id else [])])
        raise unavailable("LLM_PROVIDER is none", provider="none")
    content = content.strip()
    if not content:
        raise InvalidInput("the message is empty", field="content")
    if len(content) > MAX_MESSAGE:
        raise InvalidInput(f"the message is longer than {MAX_MESSAGE} characters", field="content")
    embedding = asyncio.create_task(assistant.embedder.embed_query(content)) if assistant.embedder else None
    try:
        stored = await _store(assistant, caller, conversation_id, content,
                              [*(note_ids or []), *([exclude_note_id] if exclude_note_id else [])], reserved=reserved)
    except BaseException:
        if embedding is not None:
            embedding.cancel()
        raise
    turn = _Turn(assistant, caller, stored, content, note_ids or [], exclude_note_id, embedding)
    assistant.generations.start(chat_key(conversation_id), stored.message_id, turn.run, owner=caller.user_id)
    return {"conversation_id": conversation_id, "user_message_id": stored.user_message_id,
            "message_id": stored.message_id}


_STORE = text(f"""
WITH conv AS (
    UPDATE conversations SET updated_at = now() WHERE id = :conversation_id AND {owner_sql("conversations", "user_id")}
    RETURNING id, rag_project_id, summary, summary_message_id, conversation_type, day_date, model
), added AS (
    INSERT INTO messages (conversation_id, user_id, role, content, status)
    SELECT conv.id, :user_id, v.role, v.content, v.status
    FROM conv, (VALUES (1, 'user', :content, 'done'), (2, 'assistant', '', 'generating'))
         AS v(n, role, content, status)
    ORDER BY v.n
    RETURNING id, role
)
SELECT conv.rag_project_id, conv.summary, conv.summary_message_id, conv.conversation_type, conv.day_date, conv.model,
       (SELECT id FROM added WHERE role = 'user') AS user_message_id,
       (SELECT id FROM added WHERE role = 'assistant') AS message_id,
       (SELECT count(*) FROM messages m WHERE m.conversation_id = conv.id) AS earlier,
       (SELECT json_agg(json_build_array(m.id, m.role, m.content) ORDER BY m.id) FROM messages m
        WHERE m.conversation_id = conv.id AND m.id > coalesce(conv.summary_message_id, 0)
          AND m.role IN ('user', 'assistant') AND m.status <> 'generating') AS past
FROM conv
""")


@dataclass
class _Stored:
    """What storing a turn's messages tells the turn: the conversation as it was, the new
    message ids, how many messages there were before, and the messages since the summary
    (the statement's snapshot predates its own inserts, so the new ones are not among them)."""

    conversation: Conversation
    user_message_id: int
    message_id: int
    earlier: int
    past: list[Past]


async def _store(assistant: Assistant, caller: Caller, conversation_id: int, content: str,
                 note_ids: list[int], *, reserved: bool = False) -> _Stored:
    """Touch the conversation, add both messages and read the history in one statement (one
    round trip, atomic).

    Whose conversation it is is checked before the generation slot is claimed: a stranger
    posting to it gets NotFound, never the Conflict that would tell it exists (and would turn
    away its owner's own messages while the stranger's claim lasted)."""
    key = chat_key(conversation_id)
    async with autocommit(assistant.db) as conn:
        await check_conversation(conn, caller, conversation_id)
        await _check_notes(conn, caller, note_ids)
        if not reserved:
            await assistant.generations.claim(key, conn)  # Conflict while this conversation is answering (anywhere)
        try:
            row = (await conn.execute(_STORE, {"conversation_id": conversation_id, "user_id": caller.user_id,
                                               "content": content})).first()
        except BaseException:
            assistant.generations.release(key)
            raise
    if row is None:
        assistant.generations.release(key)
        raise NotFound(f"conversation {conversation_id} not found", conversation_id=conversation_id)
    state = Conversation(id=conversation_id, user_id=caller.user_id, rag_project_id=row.rag_project_id,
                         summary=row.summary, summary_message_id=row.summary_message_id,
                         conversation_type=row.conversation_type, day_date=row.day_date, model=row.model)
    past = [Past(*m) for m in row.past or []]  # json_agg, decoded by the driver; NULL when there is none
    return _Stored(state, row.user_message_id, row.message_id, row.earlier, past)


async def _check_notes(s: Any, caller: Caller, note_ids: list[int]) -> None:
    found = await visible_ids(s, Note, note_ids, caller) if note_ids else set()
    for note_id in note_ids:
        if note_id not in found:
            raise NotFound(f"note {note_id} not found", note_id=note_id)


_autocommit_engines: WeakKeyDictionary[Database, AsyncEngine] = WeakKeyDictionary()


@asynccontextmanager
async def autocommit(db: Database) -> AsyncIterator[AsyncConnection]:
    """A connection whose statements commit one by one: single statements (atomic on their own)
    without BEGIN/COMMIT round trips, and without an ORM session around them."""
    engine = _autocommit_engines.get(db)
    if engine is None:
        engine = _autocommit_engines[db] = db.engine.execution_options(isolation_level="AUTOCOMMIT")
    with db.translated():
        async with engine.connect() as conn:
            yield conn


RETRYABLE = ("error", "interrupted", "stopped")
_LAST_TWO = text(f"""
SELECT m.id, m.role, m.content, m.status FROM messages m JOIN conversations c ON c.id = m.conversation_id
WHERE m.conversation_id = :conversation_id AND {owner_sql("c", "user_id")} ORDER BY m.id DESC LIMIT 2
""")
_FORGET = text("DELETE FROM messages WHERE id IN (:user_message_id, :message_id) "
               "AND conversation_id = :conversation_id")


async def retry_message(assistant: Assistant, caller: Caller, conversation_id: int) -> dict[str, Any]:
    """Send the last message again in place of its answer that failed, was cut off or was
    stopped: that answer and the message are removed, and the message is sent as new. Conflict
    when the last answer is complete or still being written (nothing changes then)."""
    key = chat_key(conversation_id)
    async with autocommit(assistant.db) as conn:
        await check_conversation(conn, caller, conversation_id)
        if isinstance(assistant.provider, NoProvider):
            raise unavailable("LLM_PROVIDER is none", provider="none")
        rows = (await conn.execute(_LAST_TWO, {"conversation_id": conversation_id, "user_id": caller.user_id})).all()
        if len(rows) < 2 or rows[0].role != "assistant" or rows[1].role != "user":
            raise Conflict(f"conversation {conversation_id} has no answer to retry", conversation_id=conversation_id)
        answer, message = rows
        if answer.status not in RETRYABLE:
            raise Conflict(f"the last answer is {answer.status}; only an answer that failed, was cut off or "
                           "was stopped can be retried", status=answer.status)
        await assistant.generations.claim(key, conn)  # Conflict while this conversation is answering (anywhere)
        try:
            await conn.execute(_FORGET, {"user_message_id": message.id, "message_id": answer.id,
                                         "conversation_id": conversation_id})
        except BaseException:
            assistant.generations.release(key)
            raise
    try:
        return await send_message(assistant, caller, conversation_id, message.content, reserved=True)
    except BaseException:
        assistant.generations.release(key)
        raise


_LAST_USER = text(f"""
SELECT m.id, m.content FROM messages m JOIN conversations c ON c.id = m.conversation_id
WHERE m.conversation_id = :conversation_id AND m.role = 'user' AND {owner_sql("c", "user_id")}
ORDER BY m.id DESC LIMIT 1
""")
_FORGET_FROM = text("DELETE FROM messages WHERE conversation_id = :conversation_id AND id >= :message_id")
_UNSUMMARISE = text("UPDATE conversations SET summary = NULL, summary_message_id = NULL "
                    "WHERE id = :conversation_id AND summary_message_id >= :message_id")


async def resend_message(assistant: Assistant, caller: Caller, conversation_id: int,
                         content: str | None = None) -> dict[str, Any]:
    """Send the conversation's last message again (``content`` in its place when given): it and
    its answer, whatever became of it, are removed and a new answer is written. Conflict while an
    answer is being written or when there is no message (nothing changes then)."""
    if content is not None and not content.strip():
        raise InvalidInput("the message is empty", field="content")
    key = chat_key(conversation_id)
    async with autocommit(assistant.db) as conn:
        await check_conversation(conn, caller, conversation_id)
        if isinstance(assistant.provider, NoProvider):
            raise unavailable("LLM_PROVIDER is none", provider="none")
        last = (await conn.execute(_LAST_USER, {"conversation_id": conversation_id, "user_id": caller.user_id})).first()
        if last is None:
            raise Conflict(f"conversation {conversation_id} has no message to send again",
                           conversation_id=conversation_id)
        await assistant.generations.claim(key, conn)  # Conflict while this conversation is answering (anywhere)
        try:
            params = {"conversation_id": conversation_id, "message_id": last.id}
            await conn.execute(_FORGET_FROM, params)
            await conn.execute(_UNSUMMARISE, params)
        except BaseException:
            assistant.generations.release(key)
            raise
    try:
        return await send_message(assistant, caller, conversation_id, content or last.content, reserved=True)
    except BaseException:
        assistant.generations.release(key)
        raise


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
        "message_id": row.id, "content": row.content, "status": row.status, "error": row.error,
        "tool_events": row.tool_events or [], "context": row.context})


async def stored_end(assistant: Assistant, caller: Caller, conversation_id: int,
                     last: StreamEvent) -> StreamEvent | None:
    """The end event of an answer whose process died while ``last`` was its last event, as its
    followers there would have seen it had the stream been cut: ``error``, status
    ``interrupted`` (once a sweep has marked it), the next id."""
    parsed = parse_event_id(last.id)
    if parsed is None:
        return None
    message_id, n = parsed
    async with assistant.db.reading() as s:
        await load_conversation(s, caller, conversation_id)
        row = (await s.execute(select(Message.status, Message.error).where(
            Message.id == message_id, Message.conversation_id == conversation_id))).first()
    if row is None or row.status not in RETRYABLE:
        return None
    return StreamEvent(f"{message_id}:{n + 1}", "error", {
        "message_id": message_id, "status": row.status, "type": row.status, "message": row.error or "",
        "details": {}})


class _Turn:
    """The background part of one turn."""

    def __init__(self, assistant: Assistant, caller: Caller, stored: _Stored, content: str, note_ids: list[int],
                 exclude_note_id: int | None, embedding: asyncio.Task[list[float] | None] | None) -> None:
        self.a = assistant
        self.model = assistant.model(caller)  # every model request of the turn, within the user's share
        self.conversation = stored.conversation
        self.conversation_id = stored.conversation.id
        self.caller = replace(caller, surface="assistant", conversation_id=self.conversation_id)
        self.stored = stored
        self.message_id = stored.message_id
        self.content = content
        self.note_ids = note_ids
        self.exclude_note_id = exclude_note_id
        self.embedding = embedding
        self.tool_events: list[dict[str, Any]] = []
        self.vector: list[float] | None = None  # the message's embedding: context, then tool picking

    async def run(self, buffer: Buffer) -> None:
        writer = MessageWriter(self.a.db, self.message_id, interval=self.a.flush_interval)
        result = self.result = LoopResult(tool_events=writer.tool_events)

        async def emit(event: str, data: dict[str, Any]) -> None:
            writer.content = result.text
            buffer.emit(event, data)

        with writer:
            try:
                if buffer.stopped:  # stopped before it started: the same path as a stop mid-answer
                    raise asyncio.CancelledError  # noqa: TRY301  handled by the branch below on purpose
                await self._prepare_and_loop(emit, result, writer)
            except asyncio.CancelledError:
                writer.content = result.text
                await asyncio.shield(writer.flush("stopped") if buffer.stopped else writer.flush(  # closing: no waiting
                    "interrupted", patience=0, error="Fable stopped before the answer was finished"))
                buffer.emit("done", {"message_id": self.message_id, "stopped": True})
                raise
            except FableError as e:  # a cut stream (StreamCut) is kept as ``interrupted``, never done
                status = "interrupted" if isinstance(e, StreamCut) else "error"
                writer.content = result.text
                await writer.flush(status, error=e.message)
                await self._end(buffer, "error", {"message_id": self.message_id, "status": status, **e.to_dict()},
                                status, e.message)
                return
            except Exception:  # noqa: BLE001 - a bug must not leave the answer "generating" for ever
                _log.exception("the answer %s failed unexpectedly", self.message_id)
                failed = InternalError("the answer failed unexpectedly; the error was logged")
                writer.content = result.text
                await writer.flush("error", error=failed.message)
                await self._end(buffer, "error", {"message_id": self.message_id, "status": "error",
                                                  **failed.to_dict()}, "error", failed.message)
                return
            finally:
                if self.embedding is not None:
                    self.embedding.cancel()
        writer.content = result.text
        await writer.flush("done")
        await self._end(buffer, "done", await self._done(), "done", result.text)

    async def _end(self, buffer: Buffer, event: str, data: dict[str, Any], status: str, said: str) -> None:
        """The answer's last event; then, once its followers' streams have ended, its owner is
        told if nobody was following (:mod:`.away`), and a finished answer titles and summarises
        its conversation."""
        buffer.emit(event, data)
        unfollowed = buffer.followers == 0
        buffer.finish()  # followers' streams end here: nothing below is part of the answer
        if status == "done":
            await self._retitle()
        if unfollowed:
            await tell_away(self.a.db, self.caller, self.conversation_id, status, said)
        if status == "done":
            await self._remember(said)

    async def _done(self) -> dict[str, Any]:
        done: dict[str, Any] = {"message_id": self.message_id}
        if not any(e["name"] == "set_rag_scope" and e["ok"] for e in self.tool_events):
            return done
        async with self.a.db.transaction() as s:
            conversation = await load_conversation(s, self.caller, self.conversation_id)
            if conversation.rag_project_id != self.conversation.rag_project_id:
                done["rag_scope"] = {"rag_project_id": conversation.rag_project_id,
                                     "label": await scope_label(s, self.caller, conversation.rag_project_id)}
        return done

    async def _prepare_and_loop(self, emit: Any, result: LoopResult, writer: MessageWriter) -> None:
        a = self.a
        self.tool_events = result.tool_events
        async with a.db.reading() as session:  # the user's preferences: one query
            zone, name, chosen = await read_settings(session, self.caller, TIMEZONE, ASSISTANT_NAME, DEFAULT_MODEL)
            about = await profile_prompt(session, self.caller)
        chosen = self.conversation.model or chosen  # the conversation's model, else theirs
        if chosen:  # for this turn's every request (titles and summaries too)
            self.model = a.model(self.caller, chosen)
        past = self.stored.past
        if memory.summary_due(past, before_answer=True):  # far behind: bound the prompt first
            past = await memory.summarise(a.db, self.model, self.conversation, past)
            self.stored.past = past
        pack = await self._context()
        await add_urls(pack, self.content, self.model, tuple(a.settings.fable_fetch_allow_hosts))
        writer.context = pack.meta()
        await emit("context", pack.meta())
        me = f"{name}, Fable's assistant" if name else "Fable's assistant"
        system = _SYSTEM.format(me=me, who=self.caller.username or "the user", today=today_line(today_in(zone), zone))
        if about:
            system += f"\n\nAbout {self.caller.username or 'the user'} (their profile):\n{about}"
        day = self.conversation.day_date
        if self.conversation.conversation_type == "journal" and day is not None:
            system += _JOURNAL.format(who=self.caller.username or "the user", day=f"{day:%A} {day.day} {day:%B %Y}")
        # The system message is the same on every turn of the conversation (a server caches it):
        # what was found for this message goes with it.
        content = _CONTEXT.format(blocks="\n\n---\n\n".join(pack.blocks), message=self.content) \
            if pack.blocks else self.content
        messages = [{"role": "system", "content": system}, *memory.prompt(self.conversation.summary, past),
                    {"role": "user", "content": content}]
        offer = a.tools.offer(self.caller, self.content, self.vector)
        mode = tool_mode(a.settings, chosen) if chosen else a.tool_mode  # LLM_TOOL_MODES may name it
        await run_tool_loop(self.model, a.dispatcher, self.caller, messages, emit, result,
                            offer=offer, mode=mode)

    async def _context(self) -> ContextPack:
        vector = self.vector = await self.embedding if self.embedding is not None else None
        async with autocommit(self.a.db) as conn:
            return await build_context(
                conn, self.caller, vector, rag_project_id=self.conversation.rag_project_id,
                note_ids=self.note_ids, exclude_note_id=self.exclude_note_id,
                embedder=self.a.retrieval)

    async def _retitle(self) -> None:
        if self.conversation.conversation_type == "journal" or not memory.wants_title(self.stored.earlier + 2):
            return
        try:
            async with autocommit(self.a.db) as conn:
                rows = (await conn.execute(select(Message.role, Message.content).where(
                    Message.conversation_id == self.conversation_id).order_by(Message.id.desc()).limit(10))).all()
            first = self.content if self.stored.earlier == 0 else ""  # no usable title: the message's first words
            title = await memory.make_title(self.model, [{"role": r, "content": c} for r, c in reversed(rows)], first,
                                            system=self.result.system)
            if not title:
                return
            async with autocommit(self.a.db) as conn:
                await conn.execute(update(Conversation).where(Conversation.id == self.conversation_id)
                                   .values(title=title))
        except FableError as e:
            _log.info("could not title conversation %s: %s", self.conversation_id, e)

    async def _remember(self, answer: str) -> None:
        """Fold the conversation into its summary once it is long (see :mod:`memory`)."""
        rows = [*self.stored.past, Past(self.stored.user_message_id, "user", self.content),
                Past(self.message_id, "assistant", answer)]
        if not memory.summary_due(rows):
            return
        try:
            await memory.summarise(self.a.db, self.model, self.conversation, rows)
        except FableError as e:
            _log.info("could not summarise conversation %s: %s", self.conversation_id, e)
