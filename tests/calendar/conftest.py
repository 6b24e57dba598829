"""Fixtures for the calendar: fast users (alice in Europe/Paris), and the service layer in one
committed transaction."""

from __future__ import annotations

import pytest
from support.users import make_user

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


@pytest.fixture
async def alice(fable: Fable) -> Caller:
    caller = await make_user(fable, "alice", password=None)
    await fable.call("set_setting", {"key": "timezone", "value": "Europe/Paris"}, caller)
    return caller


@pytest.fixture
async def bob(fable: Fable) -> Caller:
    return await make_user(fable, "bob", password=None)
