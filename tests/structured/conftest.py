"""Structured notes and calculate: fast users, the web app of the session's Fable on 127.0.0.1,
and clients of it holding a user's API key."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from support.pace import scaled
from support.servers import serve
from support.structured import Api
from support.users import quick_user

from fable_core.identity.accounts import create_api_key
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
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
        async with httpx.AsyncClient(base_url=structured_url + "/api", timeout=scaled(10),
                                     headers={"Authorization": f"Bearer {key}"}) as http:
            yield http

    return client

