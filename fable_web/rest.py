"""The REST API, generated from the registry: one route per tool that declares one.

For ``GET`` and ``DELETE`` routes the arguments come from the query string (and the path);
for the others from a JSON object body (and the path). A tool with a
:data:`~fable_core.tools.binary.Binary` parameter also takes that parameter as the raw body (any
content type but JSON; its other arguments from the query string) or as a ``multipart/form-data``
file field of its name; a :class:`~fable_core.tools.binary.Blob` result is answered as its bytes,
content type and headers. Query strings carry only text, so values
are shaped by the tool's input schema: a parameter whose schema is an array takes repeated
parameters (``?status=todo&status=done``) or a comma list (``?status=todo,done``); numbers and
booleans are converted by the dispatcher's validation, as for any other surface. Every tool can
also be called as ``POST /api/tools/{name}`` with its arguments as the body.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from fable_core.errors import FableError, InvalidInput
from fable_core.tools.binary import Blob, Download, Upload
from fable_core.tools.caller import Caller
from fable_core.tools.idempotency import HEADER
from fable_core.tools.registry import Registry, Tool
from fable_web.context import WebContext, web
from fable_web.payload import read_json_object
from fable_web.routing import ApiRoute, Doc
from fable_web.sse import stream_tool

__all__ = ["QUERY_METHODS", "array_params", "model_response", "routes", "tool_json"]

QUERY_METHODS = frozenset({"GET", "DELETE"})
Endpoint = Callable[[Request], Awaitable[Response]]


def routes(registry: Registry) -> list[ApiRoute]:
    """``/api/tools``, ``/api/tools/{name}`` and every tool's own route, in registry order; a
    streaming tool's route also has its SSE form at ``<route>/stream`` (:mod:`fable_web.sse`)."""
    generated: list[ApiRoute] = []
    for t in registry:
        if t.route is None:
            continue
        generated.append(ApiRoute(f"/api{_typed_path(t)}", _endpoint(t), methods=[t.route.method], name=t.name,
                                  doc=Doc(tool=t)))
        if t.stream:
            generated.append(ApiRoute(f"/api{_typed_path(t)}/stream", _endpoint(t, stream=True),
                                      methods=[t.route.method], name=f"{t.name}_stream", doc=Doc(tool=t, stream=True)))
    return [
        ApiRoute("/api/tools", _list_tools, methods=["GET"], doc=Doc("List the tools you may call", "tools")),
        ApiRoute("/api/tools/{name}", _call_tool, methods=["POST"], doc=Doc(any_tool=True)),
        *generated,
    ]


def _typed_path(t: Tool) -> str:
    """The route's path with integer parameters typed (``{note_id:int}``): ``/notes/import`` is
    then not a note id, and ``PATCH /notes/import`` gets 405 instead of reaching update_note."""
    assert t.route is not None
    props = t.input_schema.get("properties", {})
    path = t.route.path
    for name in t.route.path_params:
        if props.get(name, {}).get("type") == "integer":
            path = path.replace(f"{{{name}}}", f"{{{name}:int}}")
    return path


def array_params(schema: dict[str, Any]) -> frozenset[str]:
    """Names of the properties whose schema accepts an array."""
    def is_array(prop: dict[str, Any]) -> bool:
        kind = prop.get("type")
        return (kind == "array" or (isinstance(kind, list) and "array" in kind)
                or any(is_array(p) for p in prop.get("anyOf", [])))

    return frozenset(name for name, prop in schema.get("properties", {}).items() if is_array(prop))


def tool_json(t: Tool) -> dict[str, Any]:
    return {
        "name": t.name,
        "title": t.title,
        "description": t.description,
        "scope": t.scope,
        "annotations": {
            "read_only": t.annotations.read_only,
            "destructive": t.annotations.destructive,
            "idempotent": t.annotations.idempotent,
            "open_world": t.annotations.open_world,
        },
        "route": {"method": t.route.method, "path": f"/api{t.route.path}"} if t.route else None,
        "input_schema": t.input_schema,
        "output_schema": t.output_schema,
    }


def _query_args(request: Request, arrays: frozenset[str]) -> dict[str, Any]:
    """The query string as arguments. An empty value is a value (``?project=`` is an empty
    name, refused as one), not an absent parameter; an empty array parameter is an empty list."""
    args: dict[str, Any] = {}
    for key in request.query_params:
        values = request.query_params.getlist(key)
        if key in arrays:
            args[key] = [part.strip() for v in values for part in v.split(",") if part.strip()]
        else:
            args[key] = values[-1]
    return args


def _merge_path(args: dict[str, Any], path_params: dict[str, Any]) -> dict[str, Any]:
    for key, value in path_params.items():
        if key in args and str(args[key]) != str(value):
            raise InvalidInput(
                f"{key} is {value!r} in the path but {args[key]!r} in the request", field=key
            )
        args[key] = value
    return args


def _endpoint(t: Tool, *, stream: bool = False) -> Endpoint:
    assert t.route is not None
    route = t.route
    from_query = route.method in QUERY_METHODS
    arrays = array_params(t.input_schema)
    resumable = "last_event_id" in t.signature.arguments.model_fields
    binary = t.signature.binary_param

    async def endpoint(request: Request) -> Response:
        w = web(request)
        caller = await w.auth.caller(request, tool=True)  # the tool's scope decides, in the dispatcher
        if binary is not None and not from_query and not _is_json(request):
            async with contextlib.AsyncExitStack() as files:  # a spooled upload's file lives as long as the call
                spool = w.fable.settings.fable_data_dir / "tmp" if t.signature.binary_spooled else None
                args = await _binary_args(request, binary, arrays, spool, files)
                return await call(w, request, caller, args)
        args = _query_args(request, arrays) if from_query else await read_json_object(request)
        return await call(w, request, caller, args)

    async def call(w: WebContext, request: Request, caller: Caller, args: dict[str, Any]) -> Response:
        args = _merge_path(args, request.path_params)
        if stream:
            if resumable and "last-event-id" in request.headers:
                args.setdefault("last_event_id", request.headers["last-event-id"])
            return await stream_tool(w.fable.dispatcher, t.name, args, caller)
        response = model_response(await w.fable.dispatcher.run(
            t.name, args, caller, idempotency_key=request.headers.get(HEADER)), route.status)
        return await _session_kept(w, request, caller, response) if t.scope == "write" else response

    endpoint.__name__ = f"{t.name}_stream" if stream else t.name
    endpoint.__doc__ = t.description
    return endpoint


async def _call_tool(request: Request) -> Response:
    w = web(request)
    caller = await w.auth.caller(request, tool=True)
    args = await read_json_object(request)
    result = await w.fable.dispatcher.run(request.path_params["name"], args, caller,
                                          idempotency_key=request.headers.get(HEADER))
    return await _session_kept(w, request, caller, model_response(result))


async def _session_kept(w: WebContext, request: Request, caller: Caller, response: Response) -> Response:
    """``response``, clearing the session cookie when the call ended the very session it came by
    (``end_session`` of this browser's own): the cookie names nothing any more. The session's
    end was announced as it committed, so this process looks it up afresh."""
    if caller.session_id is not None and await w.auth.current(request) is None:
        w.sessions.clear(response)
    return response


def _is_json(request: Request) -> bool:
    ctype = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return ctype == "application/json" or ctype.endswith("+json")


async def _binary_args(request: Request, binary: str, arrays: frozenset[str], spool: Path | None,
                       files: contextlib.AsyncExitStack) -> dict[str, Any]:
    """The arguments of a call whose body is the Binary argument's bytes: the raw body, or the
    file field of that name in a multipart form (whose other fields are arguments too). With
    ``spool`` (a :data:`~fable_core.tools.binary.BinaryFile`), the bytes stay in a temporary file
    (the raw body is written to one in ``spool`` as it arrives) that ``files`` closes after the call."""
    args = _query_args(request, arrays)
    ctype = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if ctype != "multipart/form-data":
        if spool is not None:
            upload = await _spooled(request, spool, files)
            if upload.size:
                args[binary] = upload
            return args
        body = await request.body()
        if body:
            args[binary] = body
        return args
    try:
        form = await request.form()
    except FableError:  # the body limit
        raise
    except Exception as e:  # python-multipart's and Starlette's many parse errors: all a malformed form
        raise InvalidInput(f"the multipart body could not be read: {e}", errors=[]) from e
    files.push_async_callback(form.close)
    for key, value in form.multi_items():
        if isinstance(value, str):
            args[key] = value
        elif key == binary:  # Starlette's UploadFile: a file spooled to disk past 1 MiB
            if spool is not None:
                await value.seek(0)
                args[key] = Upload(value.file, value.size or 0)
            else:
                args[key] = await value.read()
        else:
            raise InvalidInput(f"unexpected file field {key!r}; send the file as {binary!r}", field=key)
    return args


_IN_MEMORY = 1 << 20  # a spooled body's first MiB stays in memory, the rest goes to disk


async def _spooled(request: Request, folder: Path, files: contextlib.AsyncExitStack) -> Upload:
    """The request body written to a temporary file (in ``folder``) as it arrives."""
    await anyio.Path(folder).mkdir(parents=True, exist_ok=True)
    spool = tempfile.SpooledTemporaryFile(max_size=_IN_MEMORY, mode="w+b", dir=str(folder))  # noqa: SIM115
    files.callback(spool.close)
    size = 0
    async for chunk in request.stream():  # the body limit counts as it comes (SecurityMiddleware)
        if len(chunk) > _IN_MEMORY:  # a body handed over whole (an in-process client): not on the loop
            await anyio.to_thread.run_sync(spool.write, chunk)
        else:
            spool.write(chunk)  # the page cache takes a server's chunk (64 KiB) in microseconds
        size += len(chunk)
    spool.seek(0)
    return Upload(spool, size)


def model_response(result: BaseModel, status: int = 200) -> Response:
    """A tool's result as JSON, serialised by pydantic's own encoder straight from the model; a
    :class:`Blob` as its own bytes, content type and headers; a :class:`Download` streamed as an
    attachment."""
    if isinstance(result, Download):
        quoted = result.filename.replace("\\", "_").replace('"', "_")
        headers = {**result.headers, "Content-Disposition": f'attachment; filename="{quoted}"',
                   "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
        return StreamingResponse(result.stream(), status_code=status, media_type=result.content_type, headers=headers)
    if isinstance(result, Blob):
        return Response(result.content, status_code=status, media_type=result.content_type, headers=result.headers)
    return Response(result.model_dump_json(), status_code=status, media_type="application/json")


async def _list_tools(request: Request) -> Response:
    w = web(request)
    caller = await w.auth.caller(request, tool=True)
    return JSONResponse({"items": [tool_json(t) for t in w.fable.registry.for_caller(caller)]})
