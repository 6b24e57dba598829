"""The settings tools: read, change and reset the caller's own settings, every key declared
with :func:`~fable_core.tools.preferences.setting` (REST: ``/api/settings``).

Each key has a type; a value is checked against it before anything is stored, and an unknown
key is refused naming the close ones and every key there is. Results leave nulls out: an unset
optional setting simply has no ``value``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

# the keys Fable declares itself: imported so they exist wherever the tools do
from fable_core.people.preferences import journal, personal  # noqa: F401
from fable_core.people.preferences.store import checked, drop_value, put_value, values_of
from fable_core.tools import Context, Route, tool
from fable_core.tools.preferences import KEYS, SettingKey, find_key

__all__ = ["SettingDetail", "SettingList", "SettingValue"]


def _absent(value: object) -> bool:
    return value is None


class SettingValue(BaseModel):
    """A setting: its value (left out when unset), its default and what it means."""

    key: str
    value: Any = Field(None, exclude_if=_absent)
    default: Any = Field(None, exclude_if=_absent)
    description: str


class SettingDetail(SettingValue):
    accepts: dict[str, Any] = Field(description="The JSON Schema a value must match.")


class SettingList(BaseModel):
    items: list[SettingValue]


def _view(key: SettingKey[Any], stored: Any) -> dict[str, Any]:
    value = key.default if stored is None else _current(key, stored)
    return {"key": key.name, "value": key.stored(value), "default": key.stored(key.default),
            "description": key.description}


def _current(key: SettingKey[Any], stored: Any) -> Any:
    """A stored value as its key reads it (a value an older Fable accepted reads as the default)."""
    try:
        return key.adapter.validate_python(stored)
    except ValueError:
        return key.default


@tool(group="settings", title="List your settings", scope="read", route=Route("GET", "/settings"))
async def list_settings(ctx: Context) -> SettingList:
    """Your settings (time zone, assistant, journal...): each key's value, default and meaning."""
    stored = await values_of(ctx.session, ctx.caller)
    return SettingList(items=[SettingValue(**_view(key, stored.get(name))) for name, key in KEYS.items()])


@tool(group="settings", title="Get a setting", scope="read", route=Route("GET", "/settings/{key}"))
async def get_setting(ctx: Context, key: str) -> SettingDetail:
    """One of your settings: value, default and the JSON Schema of what it accepts."""
    found = find_key(key)
    stored = (await values_of(ctx.session, ctx.caller)).get(found.name)
    return SettingDetail(**_view(found, stored), accepts=found.adapter.json_schema())


@tool(group="settings", title="Change a setting", scope="write", idempotent=True, route=Route("PUT", "/settings/{key}"))
async def set_setting(ctx: Context, key: str, value: Any) -> SettingValue:
    """Change one of your settings; the value must match its type (see get_setting). null resets it.

    Args:
        value: Any JSON value.
    """
    found = find_key(key)
    new = None if value is None else checked(found, value)
    await put_value(ctx.session, ctx.caller, found, new)
    return SettingValue(**_view(found, None if new is None else found.stored(new)))


@tool(group="settings", title="Reset a setting", scope="write", idempotent=True,
      route=Route("DELETE", "/settings/{key}"))
async def reset_setting(ctx: Context, key: str) -> SettingValue:
    """Put one of your settings back to its default."""
    found = find_key(key)
    await drop_value(ctx.session, ctx.caller, found)
    return SettingValue(**_view(found, None))
