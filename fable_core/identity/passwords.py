"""Password hashing (argon2id), off the event loop and bounded.

One argon2 hash or check costs about a tenth of a second of CPU and 64 MiB, so none is made
while a database connection is held: passwords are checked against a hash read beforehand, and
new ones hashed (:class:`Hashed`) before the transaction that stores them opens. Run on the event
loop, six parallel wrong-password loops took every other user's reads from 7 ms to 4 s; so
hashing runs in a pool of its own, :data:`THREADS` wide (argon2-cffi releases the GIL while it
works), leaving a core to the loop. At most :data:`MAX_WAITING` hashes may wait for the pool;
beyond that a password check is refused at once with ``RateLimited`` rather than queued, so a
flood cannot build a backlog that delays sign-ins for minutes. Rate limits per user and per
address (``fable_web.ratelimit``) keep a single client far below that.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from fable_core.errors import InvalidInput, RateLimited

__all__ = ["MAX_LENGTH", "MAX_WAITING", "MIN_LENGTH", "THREADS", "Hashed", "check_password", "hash_password",
           "hashed", "verify_nobody", "verify_password"]

MIN_LENGTH = 8
MAX_LENGTH = 1024
THREADS = max(1, (os.cpu_count() or 2) // 2)
MAX_WAITING = 32
_hasher = PasswordHasher()
T = TypeVar("T")


class _BoundedPool:
    """A pool of ``threads`` threads that refuses a call at once (RateLimited) when ``waiting`` calls
    already wait for a thread."""

    def __init__(self, threads: int, waiting: int) -> None:
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="fable-argon2")
        self._limit = threads + waiting
        self._in_flight = 0

    async def run(self, fn: Callable[[], T]) -> T:
        if self._in_flight >= self._limit:
            raise RateLimited("the server is busy checking passwords; retry in a moment", retry_after=1)
        self._in_flight += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn)
        finally:
            self._in_flight -= 1


_pool = _BoundedPool(THREADS, MAX_WAITING)


def check_password(password: str) -> None:
    """Refuse a password that is too short or absurdly long (InvalidInput)."""
    if len(password) < MIN_LENGTH:
        raise InvalidInput(f"password must be at least {MIN_LENGTH} characters", field="password")
    if len(password) > MAX_LENGTH:
        raise InvalidInput(f"password is longer than {MAX_LENGTH} characters", field="password")


async def hash_password(password: str) -> str:
    check_password(password)
    return await _pool.run(functools.partial(_hasher.hash, password))


class Hashed(str):
    """A password already hashed (:func:`hashed`): what functions that run inside a transaction
    take, so that no pooled connection waits ~0.1 s on the hasher (thirty sign-ups or resets at
    once held thirty connections and starved every other user)."""


async def hashed(password: str) -> Hashed:
    """``password`` checked and hashed, to hand to a transaction afterwards."""
    return Hashed(await hash_password(password))


def _verify(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


async def verify_password(password_hash: str | None, password: str) -> bool:
    if not password_hash:
        return False
    return await _pool.run(functools.partial(_verify, password_hash, password))


@functools.cache
def _dummy_hash() -> str:
    """A real hash to check against when there is no user, made on first use (not at import:
    every ``fable mcp`` start would pay for it)."""
    return _hasher.hash("not-a-password-of-anyone")


async def verify_nobody(password: str) -> None:
    """Spend what checking a real password costs, so an unknown name answers as slowly as a
    known one with a wrong password."""
    await _pool.run(lambda: _verify(_dummy_hash(), password))
