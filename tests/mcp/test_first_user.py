"""The first user a local ``fable mcp`` creates on an empty database."""

from __future__ import annotations

import asyncio

from sqlalchemy import delete, select

from fable_core.db.models import User
from fable_core.runtime import Fable
from fable_mcp.local_user import local_caller


async def test_servers_starting_at_once_share_the_first_user(fable: Fable) -> None:
    """``fable mcp`` processes starting together on an empty database all try to create the first
    user; those that lose the race act as the user the winner created instead of failing. The
    race is run a few times: which step the losers reach first varies from run to run."""
    for _ in range(5):
        callers = await asyncio.gather(*(local_caller(fable, None) for _ in range(3)))
        async with fable.db.transaction() as session:
            users = (await session.execute(select(User.id, User.role))).all()
            await session.execute(delete(User))
        assert users == [(callers[0].user_id, "admin")]
        assert {c.user_id for c in callers} == {callers[0].user_id}
