"""Domain errors → MCP tool error results: the one place the MCP surface maps them.

A tool that fails still answers ``tools/call`` normally, with ``isError: true`` and a text an
agent can act on (the conflicting note, the candidates of an ambiguous project name, the
fields that failed validation). Errors outside the domain are logged here and reported
without a traceback.
"""

from __future__ import annotations

import json
import logging

import mcp_types as types

from fable_core.errors import FableError

__all__ = ["error_result", "error_text", "unexpected_result"]

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
