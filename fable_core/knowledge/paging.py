"""Opaque cursors for keyset pagination: every list tool pages, none floods a context."""

from __future__ import annotations

import base64
import json
from typing import Any

from fable_core.errors import InvalidInput

__all__ = ["MAX_CURSOR", "decode_cursor", "encode_cursor"]

MAX_CURSOR = 512
"""Characters a cursor may have: ours are far shorter, and a longer one (say, base64 of JSON
nested deeper than Python's recursion limit) is refused before it is decoded."""


def encode_cursor(kind: str, position: list[Any]) -> str:
    raw = json.dumps({"k": kind, "p": position}, separators=(",", ":"), default=str)
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None, kind: str) -> list[Any] | None:
    """The position stored in ``cursor``; InvalidInput if it is not one of ours for ``kind``."""
    if cursor is None:
        return None
    try:
        if len(cursor) > MAX_CURSOR:
            raise ValueError(f"longer than {MAX_CURSOR} characters")
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if data["k"] != kind or not isinstance(data["p"], list):
            raise ValueError(kind)
        return data["p"]
    except (ValueError, KeyError, TypeError) as e:
        raise InvalidInput(
            "cursor is not valid for this listing; pass next_cursor from the same call unchanged",
            field="cursor",
        ) from e
