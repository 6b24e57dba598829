"""What every tool's result is made of beside its own fields: row ids, fields left out rather
than sent as null (agents pay for every byte), and the answer to a deletion."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Deleted", "RowId", "absent_when_none"]

RowId = Annotated[int, Field(ge=1, le=2**31 - 1)]
"""A row's id as an argument: a positive 32-bit integer, so a wrong one is refused before SQL."""


def absent_when_none(description: str | None = None) -> Any:
    """A result field left out, not sent as null, when it has no value: agents pay for every
    byte. ``id: int | None = absent_when_none("...")``."""
    return Field(None, exclude_if=_is_none, description=description)


def _is_none(value: object) -> bool:
    return value is None


class Deleted(BaseModel):  # what a deletion answers (no docstring: it would be every schema's description)
    model_config = ConfigDict(from_attributes=True)
    id: int
    deleted: bool = True
