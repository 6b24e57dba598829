"""API keys at /api/api-keys: list, create (the key is shown once), revoke.

The create response includes ready-to-paste MCP client configurations: one for clients that
speak streamable HTTP directly, one for stdio-only hosts (Claude Desktop) through
``fable mcp --remote``, which names this installation's ``fable`` by its absolute path
(:mod:`fable_mcp.configs`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from fable_core.admin.audit import Actor, Target, audit
from fable_core.errors import InvalidInput
from fable_core.identity import accounts
from fable_mcp.configs import http_config, stdio_config
from fable_web.context import base_url, web
from fable_web.payload import parse_model, read_json_object
from fable_web.routing import ApiRoute, Doc

__all__ = ["mcp_config", "routes"]


class NewApiKey(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100)]
    scope: Literal["read", "write"] = "write"




def mcp_config(url: str, key: str) -> dict[str, Any]:
    """Client configurations for this key: HTTP (most clients) and stdio via the bridge."""
    return {
        "http": http_config(f"{url}/mcp", key),
        "stdio": stdio_config(["mcp", "--remote", f"{url}/mcp"], {"FABLE_API_KEY": key}),
    }


async def list_keys(request: Request) -> Response:
    w = web(request)
    caller = await w.auth.caller(request)
    async with w.fable.db.transaction() as session:
        rows = await accounts.list_api_keys(session, caller.user_id)
    return JSONResponse({"items": [accounts.api_key_view(r) for r in rows]})


async def create_key(request: Request) -> Response:
    w = web(request)
    info = await w.auth.session(request)  # never with another key
    body = parse_model(NewApiKey, await read_json_object(request))
    async with w.fable.db.transaction() as session:
        row, key = await accounts.create_api_key(session, info.user_id, body.name, body.scope)
        await audit(session, Actor(info.user_id, info.username, "web"), "apikey.create",
                    Target("api_key", row.id, row.name), scope=row.scope)
        await session.refresh(row, ["created_at"])
    data = accounts.api_key_view(row) | {"key": key, "mcp_config": mcp_config(await base_url(request), key)}
    return JSONResponse(data, status_code=201)


async def revoke_key(request: Request) -> Response:
    w = web(request)
    info = await w.auth.session(request)  # a leaked key must not revoke the others
    raw = request.path_params["key_id"]
    if not (raw.isascii() and raw.isdigit()) or not 0 < int(raw) < 2**31:
        raise InvalidInput(f"key id must be a positive integer, not {raw!r}", field="key_id")
    async with w.fable.db.transaction() as session:
        row = await accounts.revoke_api_key(session, info.user_id, int(raw))
        await audit(session, Actor(info.user_id, info.username, "web"), "apikey.revoke",
                    Target("api_key", row.id, row.name))
    w.auth.forget_keys()
    return JSONResponse({"id": row.id, "deleted": True})


routes = [
    ApiRoute("/api/api-keys", list_keys, methods=["GET"], doc=Doc("List your API keys", "api-keys")),
    ApiRoute("/api/api-keys", create_key, methods=["POST"],
             doc=Doc("Create an API key (shown once; session only)", "api-keys", NewApiKey, status=201,
                     session_only=True)),
    ApiRoute("/api/api-keys/{key_id}", revoke_key, methods=["DELETE"],
             doc=Doc("Revoke an API key (session only)", "api-keys", session_only=True)),
]
