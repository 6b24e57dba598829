"""Real test users and the one password every test signs in with."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from argon2 import PasswordHasher, profiles

from fable_core.identity import passwords
from fable_core.identity.accounts import create_user
from fable_core.identity.passwords import hash_password
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

__all__ = ["CHEAP_HASHER", "PASSWORD", "REAL_HASHER", "hashing_with", "make_user", "quick_user"]

PASSWORD = "a calm and long password"  # typed into the sign-in form of docs/screenshots/login.png
_HASHES: dict[tuple[str | None, int], str] = {}  # (password, hasher) -> its hash, made once per test process


async def make_user(fable: Fable, username: str, role: str | None = None,
                    password: str | None = PASSWORD) -> Caller:
    """A real user whose password signs in through argon2 as anyone's does (``password=None``:
    none). Its hash is made once per password and test process, by the hasher every user's goes
    through, and stored as registration stores it: one argon2 hash costs ~0.1 s of CPU, more
    than most tests, and the ~1,000 tests whose alice or bob had a hash made each paid it."""
    key = (password, id(passwords._hasher))  # what the hasher of the moment makes of it
    if password is not None and key not in _HASHES:
        _HASHES[key] = await hash_password(password)
    async with fable.db.transaction() as session:
        user = await create_user(session, username, role=role)
        user.password_hash = _HASHES.get(key) if password is not None else None
    return Caller(user_id=user.id, username=user.username, role=user.role, surface="internal")


def quick_user(username: str) -> Any:
    """A fixture making ``username`` with no password: for tests that never sign in, where
    argon2 would cost more than the test (``alice = quick_user("alice")`` in a conftest)."""

    @pytest.fixture
    async def user(fable: Fable) -> Caller:
        return await make_user(fable, username, password=None)

    return user


REAL_HASHER = passwords._hasher
"""The hasher Fable hashes passwords with (argon2id at argon2-cffi's default, RFC 9106's
low-memory parameters)."""


@contextmanager
def hashing_with(hasher: PasswordHasher) -> Iterator[None]:
    """Passwords hashed by ``hasher`` meanwhile (a hash made before still verifies: it carries
    its parameters)."""
    before = passwords._hasher
    passwords._hasher = hasher
    passwords._dummy_hash.cache_clear()  # an unknown name is checked against a hash of this cost
    try:
        yield
    finally:
        passwords._hasher = before
        passwords._dummy_hash.cache_clear()


CHEAP_HASHER = PasswordHasher.from_parameters(profiles.CHEAPEST)
"""argon2id at argon2-cffi's parameters for tests: the same argon2id, the same pool and checks, at
microseconds a hash. The suite signs up and signs in a few hundred times (each a fifth of a
second of CPU at the real cost, ~40 s in all); the tests of what hashing costs the server
(``tests/core/test_passwords.py``, ``tests/web/test_login_pool.py``) take the real parameters
with the ``real_argon2`` fixture."""
