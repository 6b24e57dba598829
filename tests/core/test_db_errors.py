"""Database errors reach clients as domain errors without the database's internals."""

from __future__ import annotations

import asyncpg
import pytest
from sqlalchemy.exc import DBAPIError

from fable_core.db.errors import translate_db_error
from fable_core.errors import InvalidInput
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


def test_a_value_the_driver_refuses_is_named_without_the_statements_internals() -> None:
    refused = asyncpg.exceptions.DataError("invalid input for query argument $2: 3000000000 (value out of int32 range)")
    error = translate_db_error(DBAPIError("SELECT ... WHERE id = $2", None, refused))
    assert isinstance(error, InvalidInput)
    assert error.message == "invalid value 3000000000: out of range"


async def test_numbers_past_what_the_database_stores_are_refused_by_the_schema(fable: Fable, alice: Caller) -> None:
    note = await fable.call("create_note", {"title": "Versions", "body": "one"}, alice)
    with pytest.raises(InvalidInput) as refused:
        await fable.call("diff_note_versions", {"note_id": note["id"], "from_version": 3_000_000_000}, alice)
    assert "int32" not in refused.value.message and "$" not in refused.value.message
    assert refused.value.details["errors"][0]["field"] == "from_version"
