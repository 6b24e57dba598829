"""The OpenAPI 3.1 document at GET /api/openapi.json, built from the same schemas as the API.

Tool operations come from the registry (route, input and output schemas, descriptions); the
account endpoints from the request models their handlers validate with. Nothing is declared
twice. Pydantic's ``$defs`` are lifted into ``components/schemas``.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fable_core.tools.registry import Registry, Tool
from fable_web import account_api, admin_api, apikeys_api
from fable_web.rest import QUERY_METHODS

__all__ = ["Operation", "build_openapi", "routes"]

_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {
        "type": "object",
        "required": ["type", "message", "details"],
        "properties": {
            "type": {"type": "string", "description": "Stable error name, e.g. not_found."},
            "message": {"type": "string"},
            "details": {"type": "object"},
        },
    }},
}
_ERROR_RESPONSE = {"description": "A typed error", "content": {
    "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
_ANY_OBJECT = {"type": "object"}


@dataclass(frozen=True, slots=True)
class Operation:
    """A hand-written (non-tool) endpoint, described by the model its handler validates with."""

    method: str
    path: str
    summary: str
    tag: str
    body: type[BaseModel] | None = None
    public: bool = False
    status: int = 200
    session_only: bool = False  # refuses API keys: credentials are managed from a signed-in session
    body_required: bool = True


OPERATIONS = [
    Operation("GET", "/api/health", "Database and LLM status", "system", public=True),
    Operation("POST", "/api/auth/register", "Create an account and sign in", "auth",
              account_api.Registration, public=True, status=201),
    Operation("POST", "/api/auth/login", "Sign in (starts a cookie session)", "auth",
              account_api.Credentials, public=True),
    Operation("POST", "/api/auth/logout", "Sign out: end this session (or every one) and clear the cookie",
              "auth", account_api.Logout, public=True, status=204, body_required=False),
    Operation("GET", "/api/auth/me", "The signed-in user and the session's CSRF token", "auth"),
    Operation("POST", "/api/auth/password", "Change the password (ends every other session; session only)",
              "auth", account_api.PasswordChange, session_only=True),
    Operation("POST", "/api/auth/forgot-password", "Email a password reset link", "auth",
              account_api.ForgotPassword, public=True, status=202),
    Operation("POST", "/api/auth/reset-password", "Set a new password with a reset token", "auth",
              account_api.ResetPassword, public=True),
    Operation("PUT", "/api/auth/email", "Change the email address (it starts unverified; session only)",
              "auth", account_api.EmailChange, session_only=True),
    Operation("POST", "/api/auth/email/verification", "Mail a new verification link (session only)", "auth",
              session_only=True, status=202),
    Operation("POST", "/api/auth/verify-email", "Confirm an email address with the mailed token", "auth",
              account_api.EmailToken, public=True),
    Operation("GET", "/api/auth/sessions", "Your signed-in sessions (session only)", "auth", session_only=True),
    Operation("DELETE", "/api/auth/sessions/{session_id}", "End one of your sessions (session only)", "auth",
              session_only=True),
    Operation("GET", "/api/auth/registration", "Whether registration is open", "auth", public=True),
    Operation("GET", "/api/admin/registration", "Whether registration is open (admin)", "admin", session_only=True),
    Operation("PUT", "/api/admin/registration", "Open or close registration (admin)", "admin",
              admin_api.RegistrationSetting, session_only=True),
    Operation("GET", "/api/admin/settings", "Instance settings: registration, public URL (admin)", "admin",
              session_only=True),
    Operation("PATCH", "/api/admin/settings", "Change instance settings (admin)", "admin",
              admin_api.InstanceSettings, session_only=True),
    Operation("POST", "/api/admin/invitations", "Create an invitation link (admin)", "admin",
              admin_api.NewInvitation, status=201, session_only=True),
    Operation("GET", "/api/admin/users", "Every account (admin)", "admin", session_only=True),
    Operation("PATCH", "/api/admin/users/{user_id}", "Disable or enable an account (admin)", "admin",
              admin_api.AccountState, session_only=True),
    Operation("GET", "/api/api-keys", "List your API keys", "api-keys"),
    Operation("POST", "/api/api-keys", "Create an API key (shown once; session only)", "api-keys",
              apikeys_api.NewApiKey, status=201, session_only=True),
    Operation("DELETE", "/api/api-keys/{key_id}", "Revoke an API key (session only)", "api-keys",
              session_only=True),
    Operation("GET", "/api/tools", "List the tools you may call", "tools"),
]


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
        return _rewrite(schema, names)

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


def _tool_operation(t: Tool, comps: _Components) -> dict[str, Any]:
    assert t.route is not None
    inp = comps.lift(t.input_schema, t.name)
    out = comps.lift(t.output_schema, t.name)
    props: dict[str, Any] = inp.get("properties", {})
    required = set(inp.get("required", []))
    path = t.route.path_params
    params = [{"name": p, "in": "path", "required": True, "schema": _present(props[p])} for p in path]
    op: dict[str, Any] = {
        "operationId": t.name, "summary": t.title, "description": t.description, "tags": [t.group],
        "responses": {"200": {"description": "OK", "content": _json(out)}, "default": _ERROR_RESPONSE},
        "x-fable-scope": t.scope,
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


def _hand_operation(o: Operation, comps: _Components) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": o.path.removeprefix("/api/").replace("/", "_").replace("-", "_")
        .replace("{", "").replace("}", "") + "_" + o.method.lower(),
        "summary": o.summary, "tags": [o.tag],
        "responses": {str(o.status): {"description": "OK", **({} if o.status == 204 else {
            "content": _json(_ANY_OBJECT)})}, "default": _ERROR_RESPONSE},
    }
    if o.body is not None:
        schema = comps.lift(o.body.model_json_schema(), o.body.__name__)
        op["requestBody"] = {"required": o.body_required, "content": _json(schema)}
    params = re.findall(r"{(\w+)}", o.path)
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


def build_openapi(registry: Registry, *, version: str = "0.1.0") -> dict[str, Any]:
    comps = _Components()
    paths: dict[str, dict[str, Any]] = {}
    for o in OPERATIONS:
        paths.setdefault(o.path, {})[o.method.lower()] = _hand_operation(o, comps)
    paths.setdefault("/api/tools/{name}", {})["post"] = _call_any_operation(registry)
    for t in registry:
        if t.route is not None:
            paths.setdefault(f"/api{t.route.path}", {})[t.route.method.lower()] = _tool_operation(t, comps)
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
        state.openapi = build_openapi(state.web.fable.registry)
    return JSONResponse(state.openapi)


routes = [Route("/api/openapi.json", openapi, methods=["GET"])]
