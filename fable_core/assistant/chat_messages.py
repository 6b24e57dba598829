"""A turn with the in-app assistant, as tools: send a message, follow the answer as it is
written, stop it.

``send_message`` stores the message and starts the answer in the background
(:mod:`fable_core.assistant.chat`), answering at once (202 over REST). ``follow_answer`` is a
streaming tool: it reports the answer's events as they come (``context``, ``token``,
``tool_call``, ``tool_result``, then ``done`` or ``error``: an ``error`` event's ``status`` is
``interrupted`` when the model's stream was cut off before it finished, ``error`` otherwise),
each with an id a client resumes after (``last_event_id``, or SSE's ``Last-Event-ID``) without
a gap or a repeat, and returns the answer as stored, through any replica (an answer written by
another process is read from PostgreSQL: :mod:`fable_core.infra.shared_generations`). With no
answer running (finished over a minute ago) it returns the stored answer straight away.
``retry_answer`` sends the last message again in place of an answer that failed, was cut off or
was stopped; ``resend_message`` sends it again whatever became of its answer, edited or not
(regenerate, edit and resend). ``start_chat`` starts a conversation with its first message, and
leaves none behind when that message cannot be sent. These tools are never offered to the model itself (see
:mod:`fable_core.assistant.toolloop`).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field, StringConstraints
from sqlalchemy import delete, insert, select

from fable_core.assistant.chat import MAX_MESSAGE
from fable_core.assistant.conversations import ConversationId, ConvTitle, ScopeId, check_scope, load_conversation
from fable_core.assistant.parts import ASSISTANT
from fable_core.assistant.providers import NoProvider, unavailable
from fable_core.assistant.service import Assistant
from fable_core.db.models import Conversation, Message
from fable_core.errors import NotFound
from fable_core.people.preferences.types import ModelName
from fable_core.tools import Context, Follow, Route, tool

__all__ = ["StoredAnswer", "TurnStarted"]

NoteRef = Annotated[int, Field(ge=1, le=2**31 - 1)]
MessageText = Annotated[str, StringConstraints(min_length=1, max_length=MAX_MESSAGE)]
_BASE = "/chat/conversations/{conversation_id}"
_ANSWER = Follow("follow_answer", stop="stop_answer", arguments={"conversation_id": "conversation_id"})
"""The answer a turn starts goes on after the tool returns: follow_answer waits for it."""


class TurnStarted(BaseModel):
    conversation_id: int
    user_message_id: int
    message_id: int = Field(description="The answer's message, written in the background.")


class StoredAnswer(BaseModel):
    message_id: int
    content: str
    status: str = Field(description="done, stopped, error, interrupted, or generating (another process writes it).")
    error: str | None = Field(None, description="Why the answer failed or was cut off (error, interrupted).")
    tool_events: list[dict[str, Any]] = []
    context: dict[str, Any] | None = None


class Stopped(BaseModel):
    stopped: bool


def _assistant(ctx: Context) -> Assistant:
    found = ctx.fable.part(ASSISTANT)
    if found is None:
        raise unavailable("the assistant is not running")
    return found


@tool(group="chat", assistant=False, title="Ask the assistant", scope="write", transaction="phases", needs=("llm",),
      route=Route("POST", f"{_BASE}/messages", status=202), followed_by=_ANSWER)
async def send_message(
    ctx: Context,
    conversation_id: ConversationId,
    content: MessageText,
    note_ids: Annotated[list[NoteRef], Field(max_length=20)] = [],  # noqa: B006 - pydantic copies it
    exclude_note_id: NoteRef | None = None,
) -> TurnStarted:
    """Send a message to the assistant; it answers in the background (follow_answer).

    Args:
        note_ids: Notes given in full with this message.
        exclude_note_id: A note not to draw on.
    """
    started = await _assistant(ctx).send(ctx.caller, conversation_id, content, note_ids, exclude_note_id)
    return TurnStarted.model_validate(started)


@tool(group="chat", assistant=False, title="Start a conversation with a message", scope="write", transaction="phases",
      needs=("llm",),
      route=Route("POST", "/chat/start", status=202), followed_by=_ANSWER)
async def start_chat(
    ctx: Context,
    content: MessageText,
    note_ids: Annotated[list[NoteRef], Field(max_length=20)] = [],  # noqa: B006 - pydantic copies it
    rag_project_id: ScopeId = None,
    title: ConvTitle | None = None,
    model: ModelName | None = None,
) -> TurnStarted:
    """Start a conversation with its first message (then follow_answer).

    None is left if the message cannot be sent."""
    assistant = _assistant(ctx)
    async with ctx.transaction() as session:
        await check_scope(session, ctx.caller, rag_project_id)  # a stranger's project: NotFound, model or not
        if isinstance(assistant.provider, NoProvider):
            raise unavailable("LLM_PROVIDER is none", provider="none")
        values = {"user_id": ctx.user_id, "rag_project_id": rag_project_id, "model": model,
                  **({"title": title} if title else {})}
        conversation_id = (await session.execute(
            insert(Conversation).values(**values).returning(Conversation.id))).scalar_one()
    try:
        started = await assistant.send(ctx.caller, conversation_id, content, note_ids)
    except BaseException:
        async with ctx.transaction() as session:
            await session.execute(delete(Conversation).where(Conversation.id == conversation_id))
        raise
    return TurnStarted.model_validate(started)


@tool(group="chat", assistant=False, title="Follow the assistant's answer", scope="read", stream=True,
      route=Route("GET", f"{_BASE}/generation"))
async def follow_answer(
    ctx: Context,
    conversation_id: ConversationId,
    last_event_id: Annotated[str | None, StringConstraints(max_length=64)] = None,
) -> StoredAnswer:
    """Wait for the assistant's answer, streamed as it is written, and return it.

    Args:
        last_event_id: Resume after this event.
    """
    async for event in _assistant(ctx).follow(ctx.caller, conversation_id, last_event_id):
        if event.event == "message":  # no answer running here: the stored one
            return StoredAnswer.model_validate(event.data)
        await ctx.progress(event.event, event.data, id=event.id)
    async with ctx.reading() as session:
        return await _stored(session, ctx, conversation_id)


async def _stored(session: Any, ctx: Context, conversation_id: int) -> StoredAnswer:
    await load_conversation(session, ctx.caller, conversation_id)
    row = (await session.execute(
        select(Message).where(Message.conversation_id == conversation_id, Message.role == "assistant")
        .order_by(Message.id.desc()).limit(1))).scalar_one_or_none()
    if row is None:
        raise NotFound(f"conversation {conversation_id} has no answer yet", conversation_id=conversation_id)
    return StoredAnswer(message_id=row.id, content=row.content, status=row.status, error=row.error,
                        tool_events=row.tool_events or [], context=row.context)


@tool(group="chat", assistant=False, title="Retry the assistant's answer", scope="write", transaction="phases",
      needs=("llm",),
      route=Route("POST", f"{_BASE}/generation/retry", status=202), followed_by=_ANSWER)
async def retry_answer(ctx: Context, conversation_id: ConversationId) -> TurnStarted:
    """Replace an answer that failed, was cut off or was stopped with a new one (follow_answer)."""
    return TurnStarted.model_validate(await _assistant(ctx).retry(ctx.caller, conversation_id))


@tool(group="chat", assistant=False, title="Send the last message again", scope="write", transaction="phases",
      needs=("llm",),
      route=Route("POST", f"{_BASE}/resend", status=202), followed_by=_ANSWER)
async def resend_message(ctx: Context, conversation_id: ConversationId,
                         content: MessageText | None = None) -> TurnStarted:
    """Send the last message again, or `content` in its place; the new answer replaces the old."""
    return TurnStarted.model_validate(await _assistant(ctx).resend(ctx.caller, conversation_id, content))


@tool(group="chat", assistant=False, title="Stop the assistant's answer", scope="write", idempotent=True,
      route=Route("POST", f"{_BASE}/generation/stop"))
async def stop_answer(ctx: Context, conversation_id: ConversationId) -> Stopped:
    """Stop the answer being written in a conversation; what was written so far is kept."""
    assistant = _assistant(ctx)
    async with ctx.reading() as session:
        await load_conversation(session, ctx.caller, conversation_id)
    return Stopped(stopped=await assistant.stop_anywhere(conversation_id))
