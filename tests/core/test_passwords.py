"""Password hashing runs off the event loop, in a pool that cannot grow a backlog."""

from __future__ import annotations

import asyncio
import statistics
import time

import pytest

from fable_core.errors import InvalidInput, RateLimited
from fable_core.identity import passwords

pytestmark = pytest.mark.usefixtures("real_argon2")  # what a real hash costs the server is the subject


async def _loop_lag_while(work: asyncio.Future[object]) -> float:
    """How long a 1 ms ticker typically waited for the event loop while ``work`` ran (the median
    delay). A hash run on the loop makes every tick wait for it; off the loop, ticks keep coming,
    and the odd stall of the machine or of another task on the session's loop is one tick of many."""
    delays: list[float] = []
    while not work.done():
        before = time.perf_counter()
        await asyncio.sleep(0.001)
        delays.append(time.perf_counter() - before)
    return statistics.median(delays) if delays else 0.0


async def test_checking_passwords_leaves_the_event_loop_free() -> None:
    """Six wrong-password checks at once (what six login loops do): on the loop, the loop would
    stall for a whole hash at a time; in the pool it keeps ticking. The bound is relative to
    one hash measured here, so a slow machine measures both sides slowly; the lag is the ticks'
    median, so a stall that is not the hash's (another worker, the scheduler) is not taken for it."""
    hashed = await passwords.hash_password("the real password")
    started = time.perf_counter()
    assert not await passwords.verify_password(hashed, "a wrong password")
    one_hash = time.perf_counter() - started
    checks = asyncio.gather(*(passwords.verify_password(hashed, f"wrong {i}") for i in range(6)))
    lag = await _loop_lag_while(checks)
    assert await checks == [False] * 6
    assert lag < one_hash / 2, (lag, one_hash)


async def test_beyond_the_waiting_room_a_check_is_refused_at_once() -> None:
    hashed = await passwords.hash_password("the real password")
    admitted = passwords.THREADS + passwords.MAX_WAITING
    results = await asyncio.gather(*(passwords.verify_password(hashed, "wrong") for _ in range(admitted + 5)),
                                   return_exceptions=True)
    refused = [r for r in results if isinstance(r, RateLimited)]
    assert len(refused) == 5 and results.count(False) == admitted
    assert await passwords.verify_password(hashed, "the real password")   # the pool drained


@pytest.mark.parametrize("password", ["short", "x" * 1025])
async def test_bad_passwords_are_refused_before_any_hashing(password: str) -> None:
    with pytest.raises(InvalidInput):
        await passwords.hash_password(password)
