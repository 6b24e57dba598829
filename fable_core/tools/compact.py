"""A tool result as a model reads it: nothing that says nothing.

Surfaces that hand results to a model (MCP, the assistant's tool loop) or print them for a
person (the CLI) drop every ``null`` and, below the result's own fields, every empty string,
list and object: half of a page of task summaries is ``"due_date": null``, ``"tags": []``, and a
model pays for each byte of it in every turn. The result's own fields always stay (apart from
nulls), so an empty page still says ``"items": []``. REST keeps the full documents its OpenAPI
schema describes.
"""

from __future__ import annotations

from typing import Any

__all__ = ["compact"]


def compact(result: dict[str, Any]) -> dict[str, Any]:
    return {key: _value(value) for key, value in result.items() if value is not None}


def _value(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _value(v) for k, v in value.items() if not _empty(v)}
    if isinstance(value, list):
        return [_value(v) for v in value]
    return value


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, str | list | dict) and not value)
