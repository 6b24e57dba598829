"""Opaque cursors for keyset pagination: every list tool pages, none floods a context."""

from __future__ import annotations

import base64
import json
from typing import Any

from fable_core.errors import InvalidInput

__all__ = ["MAX_CURSOR", "decode_cursor", "encode_cursor"]

MAX_CURSOR = 2048
"""Characters a cursor may have. The longest of ours holds a 300-character title key: up to
1,200 bytes of UTF-8, 1,600 characters of base64. Anything longer is refused undecoded."""


def encode_cursor(kind: str, position: list[Any]) -> str:
    # ensure_ascii=False: a title outside ASCII costs its UTF-8 bytes, not six per character
    raw = json.dumps({"k": kind, "p": position}, separators=(",", ":"), default=str, ensure_ascii=False)
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None, kind: str) -> list[Any] | None:
    """The position stored in ``cursor``; InvalidInput if it is not one of ours for ``kind``."""
    if cursor is None:
        return None
    try:
        return _position(cursor, kind)
    except (ValueError, KeyError, TypeError, RecursionError) as e:  # RecursionError: JSON nested too deep
        raise InvalidInput(
            "cursor is not valid for this listing; pass next_cursor from the same call unchanged",
            field="cursor",
        ) from e


def _position(cursor: str, kind: str) -> list[Any]:
    if len(cursor) > MAX_CURSOR:
        raise ValueError(f"longer than {MAX_CURSOR} characters")
    data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    if data["k"] != kind or not isinstance(data["p"], list):
        raise ValueError(kind)
    return data["p"]
