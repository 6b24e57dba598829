"""Bearer keys are remembered for TTL seconds per process, and forgotten at once on request."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import delete
from support.users import make_user

from fable_core.db.models import ApiKey
from fable_core.errors import Unauthenticated
from fable_core.identity import key_callers
from fable_core.identity.accounts import create_api_key
from fable_core.identity.key_callers import KeyCallers
from fable_core.identity.revocations import Revocations
from fable_core.runtime import Fable


async def _key(fable: Fable, scope: str = "read") -> str:
    alice = await make_user(fable, "alice", password=None)
    async with fable.db.transaction() as session:
        _, key = await create_api_key(session, alice.user_id, "laptop", scope)
    return key


async def test_a_key_is_remembered_until_the_ttl_passes(fable: Fable, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(key_callers, "TTL", 0.2)
    keys = KeyCallers(fable.db)
    key = await _key(fable)
    first = await keys.caller(key, "mcp")
    assert (first.username, first.scope, first.surface) == ("alice", "read", "mcp")
    async with fable.db.transaction() as session:
        await session.execute(delete(ApiKey))  # revoked behind this process's back
    assert (await keys.caller(f"  {key} ", "rest")).surface == "rest"  # still remembered
    await asyncio.sleep(0.25)
    with pytest.raises(Unauthenticated):
        await keys.caller(key, "mcp")


async def test_forget_drops_remembered_keys_at_once(fable: Fable) -> None:
    keys = KeyCallers(fable.db)
    key = await _key(fable)
    await keys.caller(key, "rest")
    async with fable.db.transaction() as session:
        await session.execute(delete(ApiKey))
    keys.forget()
    with pytest.raises(Unauthenticated):
        await keys.caller(key, "rest")


async def test_an_unknown_key_is_refused_and_not_remembered(fable: Fable) -> None:
    keys = KeyCallers(fable.db)
    with pytest.raises(Unauthenticated):
        await keys.caller("fable_nope", "mcp")
    key = await _key(fable)
    assert (await keys.caller(key, "mcp")).username == "alice"


async def test_a_key_read_before_revocations_can_be_heard_is_not_remembered(fable: Fable) -> None:
    """A replica remembers only answers read while another process's revocation would reach it:
    one read before its LISTEN is in place could outlive a revocation for the whole TTL."""
    revocations = Revocations(fable.db.url)
    keys = KeyCallers(fable.db, revocations=revocations)
    try:
        key = await _key(fable)
        alice = await keys.caller(key, "mcp")  # starts the listening
        assert alice.username == "alice"
        async with fable.db.transaction() as session:
            await session.execute(delete(ApiKey))  # revoked by another process, before it listens
        with pytest.raises(Unauthenticated):
            await keys.caller(key, "mcp")

        await revocations.ready()
        async with fable.db.transaction() as session:
            _, heard_key = await create_api_key(session, alice.user_id, "phone", "read")
        assert (await keys.caller(heard_key, "mcp")).username == "alice"
        async with fable.db.transaction() as session:
            await session.execute(delete(ApiKey))  # behind its back, no notice: remembered for the TTL
        assert (await keys.caller(heard_key, "rest")).surface == "rest"
    finally:
        await revocations.close()
