"""Domain errors → MCP results and errors: the one place the MCP surface maps them.

A tool that fails still answers ``tools/call`` normally, with ``isError: true`` and a text an
agent can act on (the conflicting note, the candidates of an ambiguous project name, the
fields that failed validation). Errors outside the domain are logged here and reported
without a traceback. Resources, prompts and completions have no error results: their domain
errors become JSON-RPC errors (:func:`protocol_error`): database errors too, which
:class:`~fable_core.db.database.Database` turns into domain errors at its one boundary, and
unexpected ones are logged and reported as an internal error, which the SDK would otherwise put
on the wire with their own text: SQL and parameters included.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types.version import is_version_at_least

from fable_core.errors import FableError, NotFound

__all__ = [
    "RESOURCE_NOT_FOUND",
    "error_result",
    "error_text",
    "protocol_error",
    "protocol_errors",
    "resource_not_found",
    "unexpected_result",
]

H = TypeVar("H", bound=Callable[..., Awaitable[Any]])

_log = logging.getLogger(__name__)


def error_text(error: FableError) -> str:
    """``<type>: <message>``, then the details as compact JSON when there are any."""
    text = f"{error.type}: {error.message}"
    details = {k: v for k, v in error.details.items() if v not in (None, [], {})}
    if details:
        text += "\ndetails: " + json.dumps(details, ensure_ascii=False, default=str)
    return text


def error_result(error: FableError) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=error_text(error))], is_error=True)


def unexpected_result(tool: str, exc: BaseException) -> types.CallToolResult:
    """Log ``exc`` with its traceback; tell the client only that it happened."""
    _log.error("MCP tool call %s failed unexpectedly", tool, exc_info=exc)
    text = f"internal_error: {tool} failed unexpectedly; the error was logged on the server"
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


RESOURCE_NOT_FOUND = -32002
_SEP_2164 = "2026-07-28"  # from this revision on, a resource not found is invalid params (SEP-2164)


def protocol_error(error: FableError) -> MCPError:
    """A domain error met outside tools/call (resources, prompts, completions) as a JSON-RPC error.

    Not-found rows are MCP's "resource not found" (-32002); the rest are invalid params,
    except unexpected ones, which stay internal and say no more.
    """
    if isinstance(error, NotFound):
        return MCPError(RESOURCE_NOT_FOUND, f"{error.type}: {error.message}")
    if error.http_status >= 500:
        return MCPError(types.INTERNAL_ERROR, f"{error.type}: {error.message}")
    return MCPError(types.INVALID_PARAMS, f"{error.type}: {error.message}")


def resource_not_found(error: MCPError, uri: str, protocol_version: str | None) -> MCPError:
    """``error`` as a ``resources/read`` answers it: a resource not found names its URI
    (``data.uri``) and, from protocol 2026-07-28 on, is -32602 rather than -32002 (SEP-2164);
    any other error is left as it is."""
    if error.error.code != RESOURCE_NOT_FOUND:
        return error
    modern = protocol_version is not None and is_version_at_least(protocol_version, _SEP_2164)
    return MCPError(types.INVALID_PARAMS if modern else RESOURCE_NOT_FOUND, error.error.message, data={"uri": uri})


def protocol_errors(handler: H) -> H:
    """Decorate a request handler so every error leaves it as a JSON-RPC error fit for a client:
    domain and database errors as :func:`protocol_error`, anything else logged and reported as
    an internal error that says no more."""

    @functools.wraps(handler)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await handler(*args, **kwargs)
        except MCPError:
            raise
        except FableError as e:  # database errors included: Database translates them
            raise protocol_error(e) from e
        except Exception as e:
            _log.error("MCP request %s failed unexpectedly", handler.__name__, exc_info=e)
            message = "internal_error: the request failed unexpectedly; the error was logged on the server"
            raise MCPError(types.INTERNAL_ERROR, message) from e

    return wrapper  # type: ignore[return-value]
