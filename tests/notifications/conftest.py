"""Fixtures for notifications: fast users, notifications added as a domain adds them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from support.users import quick_user

from fable_core.people.notifications.notify import add_notifications
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

alice = quick_user("alice")
bob = quick_user("bob")


Tell = Callable[..., Awaitable[None]]


@pytest.fixture
def tell(fable: Fable) -> Tell:
    """``await tell(alice, "share", "bob shared ...", data={...})``: one notification, committed."""

    async def add(caller: Caller, kind: Any, title: str, **options: Any) -> None:
        async with fable.db.transaction() as session:
            await add_notifications(session, [caller.user_id], kind, title, **options)

    return add
