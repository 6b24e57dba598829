"""Fixtures for notifications: fast users, notifications added as a domain adds them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from support.users import make_user

from fable_core.caller import Caller
from fable_core.notifications.notify import add_notifications
from fable_core.runtime import Fable


@pytest.fixture
async def alice(fable: Fable) -> Caller:
    return await make_user(fable, "alice", password=None)  # argon2 would dominate


@pytest.fixture
async def bob(fable: Fable) -> Caller:
    return await make_user(fable, "bob", password=None)


Tell = Callable[..., Awaitable[None]]


@pytest.fixture
def tell(fable: Fable) -> Tell:
    """``await tell(alice, "share", "bob shared ...", data={...})``: one notification, committed."""

    async def add(caller: Caller, kind: Any, title: str, **options: Any) -> None:
        async with fable.db.transaction() as session:
            await add_notifications(session, [caller.user_id], kind, title, **options)

    return add
