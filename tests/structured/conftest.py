"""Structured notes and calculate: fast users, the web app of the session's Fable on 127.0.0.1,
and clients of it holding a user's API key."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from structured_helpers import Api, Call
from support.servers import serve
from support.users import quick_user

from fable_core.accounts import create_api_key
from fable_core.caller import Caller
from fable_core.runtime import Fable
from fable_web.app import create_app

alice = quick_user("alice")
bob = quick_user("bob")

@pytest.fixture(scope="session")
async def structured_url(fable: Fable) -> AsyncIterator[str]:
    async with serve(create_app(fable)) as url:
        yield url


@pytest.fixture
def api(fable: Fable, structured_url: str) -> Api:
    """``async with api(alice) as http:`` an HTTP client of the app with a write key of alice's."""

    @asynccontextmanager
    async def client(caller: Caller) -> AsyncIterator[httpx.AsyncClient]:
        async with fable.db.transaction() as session:
            _, key = await create_api_key(session, caller.user_id, "tests")
        async with httpx.AsyncClient(base_url=structured_url + "/api", timeout=10,
                                     headers={"Authorization": f"Bearer {key}"}) as http:
            yield http

    return client


@pytest.fixture
def call(fable: Fable, alice: Caller) -> Call:
    """``await call("save_person", name=..., as_=bob)``: the dispatcher, as alice by default (the
    tool's name is positional: people and places have a ``name`` argument)."""

    async def run(tool: str, /, as_: Caller | None = None, **arguments: Any) -> dict[str, Any]:
        return await fable.call(tool, arguments, as_ or alice)

    return run
