"""Real test users and the one password every test signs in with."""

from __future__ import annotations

from typing import Any

import pytest

from fable_core.accounts import create_user
from fable_core.caller import Caller
from fable_core.runtime import Fable

__all__ = ["PASSWORD", "make_user", "quick_user"]

PASSWORD = "a calm and long password"  # typed into the sign-in form of docs/screenshots/login.png


async def make_user(fable: Fable, username: str, role: str | None = None,
                    password: str | None = PASSWORD) -> Caller:
    """A real user; ``password=None`` skips argon2, which costs more than most tests."""
    async with fable.db.transaction() as session:
        user = await create_user(session, username, password, role=role)
    return Caller(user_id=user.id, username=user.username, role=user.role, surface="internal")


def quick_user(username: str) -> Any:
    """A fixture making ``username`` with no password: for tests that never sign in, where
    argon2 would cost more than the test (``alice = quick_user("alice")`` in a conftest)."""

    @pytest.fixture
    async def user(fable: Fable) -> Caller:
        return await make_user(fable, username, password=None)

    return user
