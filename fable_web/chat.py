"""The assistant's streaming endpoints: start a conversation, post a message (which starts a
background generation), follow it over SSE with ``Last-Event-ID`` resume, stop it; a note's
assist rewrite streamed over SSE as it is written; and pull a model with NDJSON progress (admins).

Everything else about conversations (list, read, rename, delete, scope) is REST generated from
the registry. SSE frames carry ``id: <message>:<n>`` so a client that reconnects with the
``Last-Event-ID`` header (or ``?last_event_id=``) continues exactly where it stopped; events are
``context``, ``token``, ``tool_call``, ``tool_result``, ``done`` and ``error``, and ``message``
(the stored reply) once the buffer is gone. Comments (``: ping``) keep idle streams open.

The assist stream belongs to its request, not to a background task: ``token`` events, then
``done`` with the saved draft or ``error``; it cannot be resumed, and a client that goes away
before the model has finished leaves no draft (see :func:`fable_core.assistant.assist.open_rewrite`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from fable_core.assistant.assist import open_rewrite
from fable_core.assistant.chat import MAX_MESSAGE
from fable_core.assistant.conversations import load_conversation
from fable_core.assistant.generation import StreamEvent
from fable_core.assistant.models import provider_for_admin
from fable_core.assistant.service import Assistant
from fable_core.caller import Caller
from fable_core.errors import InvalidInput, Unavailable
from fable_core.runtime import Fable
from fable_web.context import web
from fable_web.payload import parse_model, read_json_object

__all__ = ["HEARTBEAT", "NewMessage", "PullModel", "routes", "sse_frame"]

HEARTBEAT = 15.0


class NewMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: Annotated[str, Field(min_length=1, max_length=MAX_MESSAGE)]
    note_ids: Annotated[list[Annotated[int, Field(ge=1, le=2**31 - 1)]], Field(max_length=20)] = []
    exclude_note_id: Annotated[int | None, Field(ge=1, le=2**31 - 1)] = None


class PullModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[\w.\-/:]+$")]


def sse_frame(event: StreamEvent) -> bytes:
    if event.event == "ping":
        return b": ping\n\n"
    head = f"id: {event.id}\n" if event.id else ""
    return f"{head}event: {event.event}\ndata: {json.dumps(event.data, default=str)}\n\n".encode()


def _assistant(request: Request) -> Assistant:
    assistant = web(request).fable.services.get("assistant")
    if not isinstance(assistant, Assistant):
        raise Unavailable("no model available: the assistant is not running")
    return assistant


async def _owned(request: Request) -> tuple[Caller, int]:
    w = web(request)
    caller = await w.auth.caller(request)
    conversation_id = int(request.path_params["conversation_id"])
    async with w.fable.db.transaction() as s:
        await load_conversation(s, caller, conversation_id)
    return caller, conversation_id


async def create_conversation(request: Request) -> Response:
    w = web(request)
    caller = await w.auth.caller(request)
    result = await w.fable.call("create_conversation", await read_json_object(request), caller)
    return JSONResponse(result, status_code=201)


async def post_message(request: Request) -> Response:
    caller = await web(request).auth.caller(request)
    body = parse_model(NewMessage, await read_json_object(request))
    conversation_id = int(request.path_params["conversation_id"])
    started = await _assistant(request).send(caller, conversation_id, body.content, body.note_ids,
                                             body.exclude_note_id)
    started["stream"] = f"/api/chat/conversations/{conversation_id}/generation/stream"
    return JSONResponse(started, status_code=202)


async def stream(request: Request) -> Response:
    caller, conversation_id = await _owned(request)
    last = request.headers.get("last-event-id") or request.query_params.get("last_event_id")
    return _sse(_assistant(request).follow(caller, conversation_id, last, heartbeat=HEARTBEAT))


def _sse(events: AsyncIterator[StreamEvent]) -> StreamingResponse:
    async def frames() -> AsyncIterator[bytes]:
        async with aclosing(events):  # type: ignore[type-var]
            async for event in events:
                yield sse_frame(event)

    return StreamingResponse(frames(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


async def assist_stream(request: Request) -> Response:
    """``assist_note`` streamed: the body is its arguments, the note is in the path. Errors
    known before the model starts answer with their status, as the tool's own route does."""
    w = web(request)
    caller = await w.auth.caller(request)
    arguments = _with_note_id(await read_json_object(request), request.path_params["note_id"])
    return _sse(await open_rewrite(w.fable.db, w.fable.services, caller, arguments, heartbeat=HEARTBEAT))


def _with_note_id(body: dict[str, Any], note_id: str) -> dict[str, Any]:
    if "note_id" in body and str(body["note_id"]) != note_id:
        raise InvalidInput(f"note_id is {note_id!r} in the path but {body['note_id']!r} in the request",
                           field="note_id")
    return {**body, "note_id": note_id}


async def stop(request: Request) -> Response:
    _, conversation_id = await _owned(request)
    return JSONResponse({"stopped": _assistant(request).stop(conversation_id)})


async def pull_progress(request: Request) -> Response:
    """NDJSON progress lines of a model pull, then ``{"status": "success"}`` or an error line."""
    caller = await web(request).auth.caller(request)
    body = parse_model(PullModel, await read_json_object(request))
    provider = provider_for_admin(caller, web(request).fable.services)

    async def lines() -> AsyncIterator[bytes]:
        try:
            async for progress in provider.pull(body.name):
                yield (json.dumps(progress) + "\n").encode()
        except Unavailable as e:
            yield (json.dumps({"error": e.to_dict()}) + "\n").encode()

    return StreamingResponse(lines(), media_type="application/x-ndjson")


def routes(fable: Fable) -> list[Route]:
    """The assistant's streaming routes for ``fable_web.app`` (they read the assistant and the
    model from ``fable.services``)."""
    base = "/api/chat/conversations"
    return [
        Route(base, create_conversation, methods=["POST"]),
        Route(base + "/{conversation_id:int}/messages", post_message, methods=["POST"]),
        Route(base + "/{conversation_id:int}/generation/stream", stream, methods=["GET"]),
        Route(base + "/{conversation_id:int}/generation/stop", stop, methods=["POST"]),
        Route("/api/notes/{note_id}/assist/stream", assist_stream, methods=["POST"]),
        Route("/api/models/pull/progress", pull_progress, methods=["POST"]),
    ]
