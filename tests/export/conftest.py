"""Export fixtures: the app served for real (a download streams), a client with alice's key."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import httpx
import pytest
from support.pace import scaled
from support.servers import serve

from fable_core.identity.accounts import create_api_key
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app

Http = Callable[[Caller], AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
async def served(fable: Fable) -> AsyncIterator[str]:
    async with serve(create_app(fable)) as url:
        yield url


@pytest.fixture
def http(fable: Fable, served: str) -> Http:
    """``async with http(alice) as c:`` an HTTP client of the served app with a key of the caller's."""

    @asynccontextmanager
    async def client(caller: Caller) -> AsyncIterator[httpx.AsyncClient]:
        async with fable.db.transaction() as session:
            _, key = await create_api_key(session, caller.user_id, "tests")
        async with httpx.AsyncClient(base_url=served + "/api", timeout=scaled(10),
                                     headers={"Authorization": f"Bearer {key}"}) as c:
            yield c

    return client
