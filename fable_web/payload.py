"""Reading request bodies: JSON objects only, with errors that say what was wrong."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from fable_core.errors import InvalidInput
from fable_core.tools.dispatcher import validation_problems
from fable_web.errors import MalformedBody, UnsupportedMediaType

__all__ = ["parse_model", "read_json_object"]

M = TypeVar("M", bound=BaseModel)


async def read_json_object(request: Request) -> dict[str, Any]:
    """The body as a JSON object; ``{}`` when there is no body at all.

    415 if a body comes with another content type, 400 if it is not JSON, 422 if it is JSON
    but not an object.
    """
    body = await request.body()
    if not body:
        return {}
    ctype = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if ctype != "application/json" and not ctype.endswith("+json"):
        raise UnsupportedMediaType(
            f"send the body as application/json, not {ctype or 'no content type'!r}",
            content_type=ctype or None,
        )
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        where = f" at line {e.lineno} column {e.colno}" if isinstance(e, json.JSONDecodeError) else ""
        raise MalformedBody(f"the body is not valid JSON{where}") from e
    if not isinstance(data, dict):
        raise InvalidInput(f"the body must be a JSON object, not {type(data).__name__}", errors=[])
    return data


def parse_model(model: type[M], data: dict[str, Any]) -> M:
    """Validate ``data`` against a request model; 422 listing each problem."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        problems = validation_problems(e)
        summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
        raise InvalidInput(f"invalid request: {summary}", errors=problems) from e
