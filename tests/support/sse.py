"""Server-sent events read off a real HTTP response: for the assistant's stream tests and its bench."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

__all__ = ["sse_events"]


async def sse_events(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """Parsed SSE frames: {"id", "event", "data" (decoded JSON)}; comments are skipped."""
    fields: dict[str, Any] = {}
    async for line in response.aiter_lines():
        if line == "":
            if fields:
                fields["data"] = json.loads(fields.get("data", "null"))
                yield fields
                fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
