"""Where the settings live: one ``settings`` row per user and key that differs from the key's
default, its value as JSON. A value equal to the default (or null) is no row, so a default that
changes in a later Fable reaches everyone who never chose otherwise.

Every change is announced on :data:`CHANNEL` (payload ``"<user id> <key>"``), delivered when it
commits, to every process listening: how the journal's scheduler hears of a new prep time.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import Setting
from fable_core.errors import InvalidInput
from fable_core.tools.access import owned_by
from fable_core.tools.caller import Caller
from fable_core.tools.dispatcher import validation_problems
from fable_core.tools.preferences import SettingKey

__all__ = ["CHANNEL", "checked", "drop_value", "put_value", "values_of"]

CHANNEL = "fable_settings"


def checked(key: SettingKey[Any], value: Any) -> Any:
    """``value`` validated by the key's type; InvalidInput naming what is wrong, and where in it."""
    try:
        return key.adapter.validate_python(value)
    except ValidationError as e:
        problems = validation_problems(e)
        for problem in problems:
            problem["message"] = problem["message"].removeprefix("Value error, ")
            path = problem["field"]
            problem["field"] = "value" if path == "(arguments)" else f"value.{path}"
        summary = "; ".join(p["message"] if p["field"] == "value" else f"{p['field']}: {p['message']}"
                            for p in problems)
        raise InvalidInput(f"invalid value for {key.name}: {summary}", errors=problems, key=key.name) from e


async def values_of(session: AsyncSession, caller: Caller) -> dict[str, Any]:
    """The caller's stored values by key (as JSON; unknown or stale ones included)."""
    rows = await session.execute(select(Setting.key, Setting.value).where(owned_by(Setting, caller)))
    return dict(rows.all())


async def put_value(session: AsyncSession, caller: Caller, key: SettingKey[Any], value: Any) -> None:
    """Store an already :func:`checked` value (null removes the row, and so does the default of
    a key where choosing it is no news)."""
    stored = key.stored(value)
    if stored is None or (stored == key.stored(key.default) and not key.chosen_matters):
        await drop_value(session, caller, key)
        return
    statement = pg_insert(Setting).values(user_id=caller.user_id, key=key.name, value=stored)
    await session.execute(statement.on_conflict_do_update(
        index_elements=[Setting.user_id, Setting.key], set_={"value": stored, "updated_at": func.now()}))
    await _announce(session, caller, key)


async def drop_value(session: AsyncSession, caller: Caller, key: SettingKey[Any]) -> None:
    await session.execute(delete(Setting).where(owned_by(Setting, caller), Setting.key == key.name))
    await _announce(session, caller, key)


async def _announce(session: AsyncSession, caller: Caller, key: SettingKey[Any]) -> None:
    await session.execute(select(func.pg_notify(CHANNEL, f"{caller.user_id} {key.name}")))
