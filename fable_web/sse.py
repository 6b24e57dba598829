"""The one SSE form of every streaming tool's route: ``<its route>/stream``.

The tool runs through the dispatcher as any call (validated, authorised, its usage row
written); each progress item it reports becomes a frame, ``id:`` (when the item has one, so a
client can resume with ``Last-Event-ID``), ``event:`` its kind, ``data:`` its JSON. The stream
ends with ``event: result`` (the tool's result, as the JSON route would answer it) or
``event: error`` (``{"type", "message", "details"}``). A failure known before the first item
(bad arguments, a note the caller cannot see, no model) is answered with its HTTP status and JSON
error instead, as the JSON route would. A comment (``: ping``) every :data:`HEARTBEAT` quiet
seconds keeps proxies from cutting an idle stream. A client that goes away cancels the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel
from starlette.responses import Response, StreamingResponse

from fable_core.errors import FableError
from fable_core.tools.caller import Caller
from fable_core.tools.dispatcher import Dispatcher, InternalError
from fable_core.tools.progress import Progress

__all__ = ["HEARTBEAT", "frame", "stream_tool"]

HEARTBEAT = 15.0
_log = logging.getLogger(__name__)
_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def frame(event: str, data: Any, id: str | None = None) -> bytes:  # noqa: A002  the SSE field's name
    head = f"id: {id}\n" if id else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, default=str, ensure_ascii=False)}\n\n".encode()


async def stream_tool(dispatcher: Dispatcher, name: str, arguments: dict[str, Any], caller: Caller, *,
                      heartbeat: float = HEARTBEAT) -> Response:
    items: asyncio.Queue[Progress] = asyncio.Queue()
    call = asyncio.create_task(dispatcher.run(name, arguments, caller, progress=items.put))
    getting: asyncio.Task[Progress] = asyncio.create_task(items.get())
    await asyncio.wait({call, getting}, return_when=asyncio.FIRST_COMPLETED)
    if call.done() and not getting.done():
        getting.cancel()
        call.result()  # a failure before any progress: raised, answered with its status
        return StreamingResponse(_ended(call), media_type="text/event-stream", headers=_HEADERS)
    return StreamingResponse(_frames(items, getting, call, heartbeat), media_type="text/event-stream",
                             headers=_HEADERS)


async def _frames(items: asyncio.Queue[Progress], getting: asyncio.Task[Progress],
                  call: asyncio.Task[BaseModel], heartbeat: float) -> AsyncIterator[bytes]:
    try:
        while True:
            done, _ = await asyncio.wait({getting, call}, timeout=heartbeat, return_when=asyncio.FIRST_COMPLETED)
            if getting in done:
                item = getting.result()
                yield frame(item.event, item.data, item.id)
                getting = asyncio.create_task(items.get())
            elif call in done:
                while not items.empty():
                    item = items.get_nowait()
                    yield frame(item.event, item.data, item.id)
                break
            else:
                yield b": ping\n\n"
        async for end in _ended(call):
            yield end
    finally:
        getting.cancel()
        if not call.done():  # the client went away: the call stops with it
            call.cancel()
        with contextlib.suppress(BaseException):
            await call


async def _ended(call: asyncio.Task[BaseModel]) -> AsyncIterator[bytes]:
    try:
        result = call.result()
    except FableError as e:
        yield frame("error", e.to_dict())
        return
    except Exception:  # noqa: BLE001 - the dispatcher logged it; the client gets an error event
        yield frame("error", InternalError("the call failed unexpectedly; the error was logged").to_dict())
        return
    yield frame("result", result.model_dump(mode="json"))
