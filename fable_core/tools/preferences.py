"""The per-user setting keys, declared by the domains that read them: each key has a type (any
annotation pydantic validates), a default and a description, so that the settings tools, REST
and UI validate and document every key from this one table, and a domain reads its own key typed.

    NOTIFY = setting("notifications", NotificationPrefs, NotificationPrefs(), "What to be told, and how")
    prefs = await read_setting(session, caller, NOTIFY)

A key is found by name with :func:`find_key`, whose error names the close keys: an agent that
asks for ``time_zone`` learns ``timezone`` from the error itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import TypeAdapter, ValidationError
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import Setting
from fable_core.errors import NotFound
from fable_core.tools.access import owned_by
from fable_core.tools.caller import Caller
from fable_core.tools.suggest import closest, hint

__all__ = ["KEYS", "SettingKey", "find_key", "is_set", "read_setting", "read_settings", "setting"]

T = TypeVar("T")


@dataclass(frozen=True)
class SettingKey(Generic[T]):
    name: str
    type: Any
    default: T
    description: str
    adapter: TypeAdapter[T] = field(repr=False, compare=False)
    chosen_matters: bool = False  # a value equal to the default is kept: that it was chosen is news (:func:`is_set`)

    def stored(self, value: T) -> Any:
        """``value`` as JSON, as the settings table keeps it."""
        return self.adapter.dump_python(value, mode="json")


KEYS: dict[str, SettingKey[Any]] = {}


def setting(name: str, type_: Any, default: T, description: str, *, chosen_matters: bool = False) -> SettingKey[T]:
    """Declare a per-user setting key (once, at import time)."""
    if name in KEYS:
        raise ValueError(f"setting {name!r} is already declared")
    key: SettingKey[T] = SettingKey(name, type_, default, description, TypeAdapter(type_), chosen_matters)
    KEYS[name] = key
    return key


def find_key(name: str) -> SettingKey[Any]:
    """The key called ``name``; NotFound naming the close ones and every key there is."""
    key = KEYS.get(name)
    if key is not None:
        return key
    matches = closest(name, KEYS)
    said = f"no setting named {name[:100]!r}" + (f"; {hint(matches)}" if matches else ".")
    raise NotFound(f"{said} The settings are: {', '.join(KEYS)}.", key=name[:100], did_you_mean=matches,
                   known=list(KEYS))


async def read_setting(session: AsyncSession, caller: Caller, key: SettingKey[T]) -> T:
    """The caller's value of ``key``, or its default when unset or no longer valid (a stored
    value that an older Fable accepted is never an error for the reader)."""
    value = await session.scalar(select(Setting.value).where(owned_by(Setting, caller), Setting.key == key.name))
    return _typed(key, value)


async def is_set(session: AsyncSession, caller: Caller, key: SettingKey[Any]) -> bool:
    """Whether the caller chose a value of ``key`` (a default was never chosen)."""
    return bool(await session.scalar(select(Setting.value.is_not(None)).where(
        owned_by(Setting, caller), Setting.key == key.name)))


async def read_settings(session: AsyncSession, caller: Caller, *keys: SettingKey[Any]) -> tuple[Any, ...]:
    """The caller's values of several keys, in their order, in one query (a chat turn reads
    three before its first token)."""
    rows = await session.execute(select(Setting.key, Setting.value).where(
        owned_by(Setting, caller), Setting.key.in_([k.name for k in keys])))
    stored: dict[str, Any] = dict(rows.all())
    return tuple(_typed(key, stored.get(key.name)) for key in keys)


def _typed(key: SettingKey[T], value: Any) -> T:
    if value is None:
        return key.default
    try:
        return key.adapter.validate_python(value)
    except ValidationError:
        return key.default
