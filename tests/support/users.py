"""Real test users and the one password every test signs in with."""

from __future__ import annotations

from typing import Any

import pytest

from fable_core.identity.accounts import create_user
from fable_core.identity.passwords import hash_password
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

__all__ = ["PASSWORD", "make_user", "quick_user"]

PASSWORD = "a calm and long password"  # typed into the sign-in form of docs/screenshots/login.png
_HASHES: dict[str, str] = {}  # password -> its argon2 hash, made once per test process


async def make_user(fable: Fable, username: str, role: str | None = None,
                    password: str | None = PASSWORD) -> Caller:
    """A real user whose password signs in through argon2 as anyone's does (``password=None``:
    none). Its hash is made once per password and test process, by the hasher every user's goes
    through, and stored as registration stores it: one argon2 hash costs ~0.1 s of CPU, more
    than most tests, and the ~1,000 tests whose alice or bob had a hash made each paid it."""
    if password is not None and password not in _HASHES:
        _HASHES[password] = await hash_password(password)
    async with fable.db.transaction() as session:
        user = await create_user(session, username, role=role)
        user.password_hash = _HASHES.get(password) if password is not None else None
    return Caller(user_id=user.id, username=user.username, role=user.role, surface="internal")


def quick_user(username: str) -> Any:
    """A fixture making ``username`` with no password: for tests that never sign in, where
    argon2 would cost more than the test (``alice = quick_user("alice")`` in a conftest)."""

    @pytest.fixture
    async def user(fable: Fable) -> Caller:
        return await make_user(fable, username, password=None)

    return user
