"""The fields of structured notes, one pydantic model per kind, and how an update merges them.

A person's, place's or list's fields live in ``notes.fields`` (JSONB) beside the note's title and
body, are kept with every version, and their string values are searched like the note's tags.
Stored fields never hold nulls: a field set to ``null`` in an update is removed.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AnyHttpUrl, BaseModel, ConfigDict, TypeAdapter, ValidationError

from fable_core.errors import InvalidInput

__all__ = ["MAX_ITEMS", "Entity", "Fields", "ItemText", "ListItem", "PersonFields", "PlaceFields", "merged"]

Entity = Literal["person", "place", "list"]
MAX_ITEMS = 500

# Constraints as validators, not schema keywords: every tool's schema is paid for in each
# client's tools/list, and these fields' limits need no explaining.


def _sized(limit: int) -> Any:
    def check(value: str) -> str:
        value = value.strip()
        if not 1 <= len(value) <= limit:
            raise ValueError(f"must be 1 to {limit} characters")
        return value
    return AfterValidator(check)


def _matching(pattern: str, what: str, limit: int) -> Any:
    shape = re.compile(pattern)

    def check(value: str) -> str:
        value = value.strip()
        if len(value) > limit or not shape.match(value):
            raise ValueError(f"{value[:80]!r} is not {what}")
        return value
    return AfterValidator(check)


def _links(values: list[str]) -> list[str]:
    if len(values) > 20:
        raise ValueError("at most 20 links")
    return [str(_URL.validate_python(v.strip())) for v in values]


_URL: TypeAdapter[AnyHttpUrl] = TypeAdapter(AnyHttpUrl)
_Short = Annotated[str, _sized(200)]
_Long = Annotated[str, _sized(1000)]
_Email = Annotated[str, _matching(r"^[^@\s]+@[^@\s]+\.[^@\s]+$", "an email address", 254)]
_Phone = Annotated[str, _matching(r"^\+?[0-9 ()./-]{3,40}$", "a phone number", 40)]
_Url = Annotated[str, AfterValidator(lambda v: str(_URL.validate_python(v.strip())))]
_Links = Annotated[list[str], AfterValidator(_links)]
ItemText = Annotated[str, _sized(500)]


class Fields(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _within(limit: float) -> Any:
    def check(value: float) -> float:
        if not -limit <= value <= limit:
            raise ValueError(f"must be between -{limit} and {limit}")
        return value
    return check


class PersonFields(Fields):
    """In an update, `null` removes a field."""

    email: _Email | None = None
    phone: _Phone | None = None
    birthday: date | None = None
    organisation: _Short | None = None
    role: _Short | None = None
    relation: _Short | None = None
    address: _Long | None = None
    links: _Links | None = None


class PlaceFields(Fields):
    """In an update, `null` removes a field."""

    address: _Long | None = None
    lat: Annotated[float, AfterValidator(_within(90))] | None = None
    lon: Annotated[float, AfterValidator(_within(180))] | None = None
    category: _Short | None = None
    url: _Url | None = None
    phone: _Phone | None = None
    hours: _Short | None = None


class ListItem(BaseModel):
    text: ItemText
    checked: bool = False


_MODELS: dict[str, type[Fields]] = {"person": PersonFields, "place": PlaceFields}


def merged(entity: Entity, stored: dict[str, Any] | None, update: Fields | None) -> dict[str, Any]:
    """``stored`` fields with those set in ``update`` (its explicitly given ones: ``null`` removes
    a field), validated as a whole and without nulls, as JSON."""
    result = dict(stored or {})
    if update is not None:
        for name, value in update.model_dump(mode="json", exclude_unset=True).items():
            if value is None:
                result.pop(name, None)
            else:
                result[name] = value
    try:
        checked = _MODELS[entity].model_validate(result)
    except ValidationError as e:  # stored fields are valid, so an update made them inconsistent
        raise InvalidInput(f"invalid {entity} fields: {e.errors()[0]['msg']}", field="fields") from e
    if isinstance(checked, PlaceFields) and (checked.lat is None) != (checked.lon is None):
        raise InvalidInput("a place's lat and lon go together: give both or neither", field="fields")
    return checked.model_dump(mode="json", exclude_none=True)
