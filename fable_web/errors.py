"""How the HTTP API reports failure: every error, one place, one body shape.

``{"error": {"type", "message", "details"}}`` with the status of the typed error
(:mod:`fable_core.errors`); the message is for people (:mod:`fable_web.plain`: no tool names or
arguments; the agent's message it came from is ``details.hint``). Errors only HTTP can produce
(a body that is not JSON, a wrong content type) are declared here. Unexpected exceptions become
a 500 ``internal_error`` without a traceback on the wire.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from fable_core.errors import FableError, NotFound, UnknownTool
from fable_core.tools.registry import REGISTRY
from fable_mcp.auth import METADATA_PATH, SCOPES, base_url
from fable_web.plain import for_people
from fable_web.requestlog import record_error

__all__ = [
    "MalformedBody",
    "MethodNotAllowed",
    "RequestTimeout",
    "UnsupportedMediaType",
    "error_response",
    "exception_handlers",
]

_log = logging.getLogger(__name__)


class MalformedBody(FableError):
    """Raised when a request body is not parseable JSON."""

    type = "malformed_json"
    http_status = 400


class UnsupportedMediaType(FableError):
    """Raised when a request body is sent with a content type other than JSON."""

    type = "unsupported_media_type"
    http_status = 415


class RequestTimeout(FableError):
    """Answered by :mod:`fable_web.timeouts` when a client stalls while sending its request body."""

    type = "request_timeout"
    http_status = 408


class MethodNotAllowed(FableError):
    """Raised when a known path is asked for with a method it does not serve."""

    type = "method_not_allowed"
    http_status = 405


def error_response(err: FableError, headers: dict[str, str] | None = None) -> JSONResponse:
    headers = dict(headers or {})
    retry = err.details.get("retry_after")
    if err.http_status in (429, 503) and retry is not None:
        headers["Retry-After"] = str(int(retry))
    if err.http_status == 401:
        headers.setdefault("WWW-Authenticate", 'Bearer realm="fable"')
    body = err.to_dict()
    message, hint = for_people(err.message, (t.name for t in REGISTRY))
    if hint is not None and not isinstance(err, UnknownTool):  # naming a tool is its point
        body.update(message=message, details={**body["details"], "hint": hint})
    return JSONResponse({"error": body}, status_code=err.http_status, headers=headers)


async def _fable_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, FableError)
    web = getattr(request.app.state, "web", None)
    if exc.http_status == 401 and web is not None and web.fable.settings.fable_oauth_enabled:
        # RFC 9728 §5.1: where an OAuth client learns how to get a token (as on /mcp)
        metadata = f"{base_url(web.fable.settings, request)}{METADATA_PATH}"
        return error_response(exc, headers={
            "WWW-Authenticate": f'Bearer realm="fable", resource_metadata="{metadata}", scope="{SCOPES}"'})
    return error_response(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return error_response(NotFound(f"no such endpoint: {request.url.path}", path=request.url.path))
    if exc.status_code == 405:
        err: FableError = MethodNotAllowed(
            f"{request.method} is not allowed on {request.url.path}", method=request.method
        )
        return error_response(err, headers=dict(exc.headers or {}))
    body: dict[str, Any] = {"type": "http_error", "message": str(exc.detail), "details": {}}
    return JSONResponse({"error": body}, status_code=exc.status_code, headers=exc.headers)


async def _client_gone(_: Request, __: Exception) -> Response:
    """The client hung up while sending its body: nothing to answer, nothing to log."""
    return Response(status_code=400)


async def _unexpected(request: Request, exc: Exception) -> Response:
    _log.exception("unhandled error on %s %s", request.method, request.url.path)
    web = getattr(request.app.state, "web", None)
    if web is not None:
        record_error(request, web.fable.dispatcher.usage, exc)
    body = {"type": "internal_error", "message": "unexpected server error; it was logged", "details": {}}
    return JSONResponse({"error": body}, status_code=500)


exception_handlers: dict[Any, Any] = {
    FableError: _fable_error,
    HTTPException: _http_error,
    ClientDisconnect: _client_gone,
    Exception: _unexpected,
}
