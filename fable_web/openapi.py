"""The OpenAPI 3.1 document at GET /api/openapi.json, built by walking the app's routes.

Every /api route is an :class:`~fable_web.routing.ApiRoute` carrying its description: a tool's
route is described from the registry (route, status, input and output schemas, description; a
streaming tool's ``/stream`` form as ``text/event-stream``), a hand-written route by the request
model its handler validates with. Nothing is declared twice; a test walks ``app.routes`` and
finds every /api route in the document. Pydantic's ``$defs`` are lifted into
``components/schemas``.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from fable_core.tools.registry import Registry, Tool
from fable_web.rest import QUERY_METHODS
from fable_web.routing import ApiRoute, Doc

__all__ = ["build_openapi", "routes"]

_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {
        "type": "object",
        "required": ["type", "message", "details"],
        "properties": {
            "type": {"type": "string", "description": "Stable error name, e.g. not_found."},
            "message": {"type": "string", "description": "For people: names no tool or argument."},
            "details": {"type": "object", "description": "`hint`: the message as agents get it, when a tool's "
                                                         "name or arguments were taken out of `message`."},
        },
    }},
}
_ERROR_RESPONSE = {"description": "A typed error", "content": {
    "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
_ANY_OBJECT = {"type": "object"}
_SSE_EVENT = {  # one event of a streaming tool's SSE form; its data is JSON text
    "type": "object", "required": ["event", "data"],
    "properties": {"event": {"type": "string"}, "data": {"type": "string"}, "id": {"type": "string"}},
}

_BINARY = {"type": "string", "format": "binary"}
_BYTES = {"*/*": {"schema": _BINARY}}  # a Blob result: its own bytes and content type


def _bytes(t: Tool) -> dict[str, Any]:
    """A binary result's content: its declared media types (JSON ones as any object), else any."""
    types = t.signature.media_types
    if not types:
        return _BYTES
    return {m: {"schema": _ANY_OBJECT if m.endswith("json") else _BINARY} for m in types}


def _binary_bodies(body: dict[str, Any], binary: str) -> dict[str, Any]:
    """A Binary argument's other request bodies: the raw bytes (the other arguments in the query
    string), or a multipart form with the bytes as a file field."""
    form = {**body, "properties": {**body["properties"], binary: _BINARY}}
    return {"application/octet-stream": {"schema": _BINARY}, "multipart/form-data": {"schema": form}}


class _Components:
    """Collects schemas under components/schemas, renaming on the rare differing duplicate."""

    def __init__(self) -> None:
        self.schemas: dict[str, Any] = {"Error": _ERROR}

    def lift(self, schema: dict[str, Any], owner: str) -> dict[str, Any]:
        schema = copy.deepcopy(schema)
        defs: dict[str, Any] = schema.pop("$defs", {})
        names = {name: self._free_name(name, body, owner) for name, body in defs.items()}
        for name, body in defs.items():
            self.schemas[names[name]] = _rewrite(body, names)
        lifted: dict[str, Any] = _rewrite(schema, names)
        return lifted

    def _free_name(self, name: str, body: dict[str, Any], owner: str) -> str:
        if name not in self.schemas:
            return name
        if self.schemas[name] == body or _rewrite(body, {name: name}) == self.schemas[name]:
            return name
        return f"{owner}_{name}"


def _rewrite(node: Any, names: dict[str, str]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = names.get(ref[len("#/$defs/"):], ref[len("#/$defs/"):])
            return {**node, "$ref": f"#/components/schemas/{target}"}
        return {k: _rewrite(v, names) for k, v in node.items()}
    if isinstance(node, list):
        return [_rewrite(v, names) for v in node]
    return node


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def _tool_operation(t: Tool, comps: _Components, *, stream: bool = False) -> dict[str, Any]:
    assert t.route is not None
    inp = comps.lift(t.strict_schema, t.name)
    out = comps.lift(t.output_schema, t.name)
    props: dict[str, Any] = inp.get("properties", {})
    required = set(inp.get("required", []))
    path = t.route.path_params
    params = [{"name": p, "in": "path", "required": True, "schema": _present(props[p])} for p in path]
    answer = ({"200": {"description": "Server-Sent Events: each progress item as `event: <kind>`, then "
                                      "`event: result` (the result) or `event: error`",
                       "content": {"text/event-stream": {"schema": _SSE_EVENT}}}}
              if stream else {str(t.route.status): {"description": "OK", "content": _bytes(t) if t.signature.blob
                                                    else _json(out)}})
    op: dict[str, Any] = {
        "operationId": f"{t.name}_stream" if stream else t.name, "summary": t.title,
        "description": t.description, "tags": [t.group],
        "responses": {**answer, "default": _ERROR_RESPONSE}, "x-fable-scope": t.scope,
    }
    rest = {k: v for k, v in props.items() if k not in path}
    if t.route.method in QUERY_METHODS:
        params += [
            {"name": k, "in": "query", "required": k in required, "schema": v,
             **({"description": v["description"]} if "description" in v else {})}
            for k, v in rest.items()
        ]
    elif rest:
        body = {**inp, "properties": rest, "required": [k for k in inp.get("required", []) if k in rest]}
        if not body["required"]:
            body.pop("required")
        op["requestBody"] = {"required": bool(body.get("required")), "content": _json(body)}
        if t.signature.binary_param is not None:  # the Binary argument as the raw body, or a form's file
            op["requestBody"]["content"].update(_binary_bodies(body, t.signature.binary_param))
    if params:
        op["parameters"] = params
    return op


def _present(schema: dict[str, Any]) -> dict[str, Any]:
    """A path parameter's schema: it is always there, so never null (an optional argument that
    a route puts in its path, such as a project id or name, is required there)."""
    kind = schema.get("type")
    if isinstance(kind, list) and "null" in kind:
        rest = [k for k in kind if k != "null"]
        schema = {k: v for k, v in schema.items() if not (k == "default" and v is None)}
        return {**schema, "type": rest[0] if len(rest) == 1 else rest}
    return schema


def _hand_operation(path: str, method: str, o: Doc, comps: _Components) -> dict[str, Any]:
    result = _ANY_OBJECT if o.result is None else comps.lift(
        o.result.model_json_schema(mode="serialization"), o.result.__name__)
    op: dict[str, Any] = {
        "operationId": path.removeprefix("/api/").replace("/", "_").replace("-", "_")
        .replace("{", "").replace("}", "") + "_" + method.lower(),
        "summary": o.summary, "tags": [o.tag],
        "responses": {str(o.status): {"description": "OK", **({} if o.status == 204 else {
            "content": _json(result)})}, "default": _ERROR_RESPONSE},
    }
    if o.body is not None:
        schema = comps.lift(o.body.model_json_schema(), o.body.__name__)
        op["requestBody"] = {"required": o.body_required, "content": _json(schema)}
    params = re.findall(r"{(\w+)}", path)
    if params:
        op["parameters"] = [{"name": p, "in": "path", "required": True,
                             "schema": {"type": "integer", "minimum": 1}} for p in params]
    if o.public:
        op["security"] = []
    elif o.session_only:
        op["security"] = [{"session": []}]
    return op


def _call_any_operation(registry: Registry) -> dict[str, Any]:
    return {
        "operationId": "call_tool", "summary": "Call any tool by name", "tags": ["tools"],
        "description": "The body is the tool's arguments (see GET /api/tools for each schema).",
        "parameters": [{"name": "name", "in": "path", "required": True,
                        "schema": {"type": "string", "enum": [t.name for t in registry]}}],
        "requestBody": {"required": False, "content": _json(_ANY_OBJECT)},
        "responses": {"200": {"description": "The tool's result", "content": _json(_ANY_OBJECT)},
                      "default": _ERROR_RESPONSE},
    }


def documented_path(route: ApiRoute) -> str:
    """The route's path as OpenAPI writes it: ``{note_id:int}`` is ``{note_id}``."""
    return re.sub(r"{(\w+):\w+}", r"{\1}", route.path)


def build_openapi(app_routes: list[BaseRoute], registry: Registry, *, version: str = "0.1.0") -> dict[str, Any]:
    comps = _Components()
    paths: dict[str, dict[str, Any]] = {}
    for route in app_routes:
        if not isinstance(route, ApiRoute):
            continue
        path, doc = documented_path(route), route.doc
        for method in sorted((route.methods or set()) - {"HEAD"}):
            if doc.any_tool:
                operation = _call_any_operation(registry)
            elif doc.tool is not None:
                operation = _tool_operation(doc.tool, comps, stream=doc.stream)
            else:
                operation = _hand_operation(path, method, doc, comps)
            paths.setdefault(path, {})[method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": "Fable API", "version": version,
                 "description": "REST surface of Fable, generated from its tool registry."},
        "paths": paths,
        "components": {
            "schemas": comps.schemas,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "An API key"},
                "session": {"type": "apiKey", "in": "cookie", "name": "fable_session"},
            },
        },
        "security": [{"bearer": []}, {"session": []}],
    }


async def openapi(request: Request) -> Response:
    state = request.app.state
    if getattr(state, "openapi", None) is None:
        state.openapi = build_openapi(request.app.routes, state.web.fable.registry)
    return JSONResponse(state.openapi)


routes = [ApiRoute("/api/openapi.json", openapi, methods=["GET"],
                   doc=Doc("This document: the API as OpenAPI 3.1", "system", public=True))]
