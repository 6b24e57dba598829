"""Importer fixtures: a REST client with a key of alice's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from support.importers import Rest

from fable_core.identity.accounts import create_api_key
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app


@pytest.fixture
def rest(fable: Fable) -> Rest:
    """``async with rest(alice) as http:`` the REST app with an API key of the caller's."""

    @asynccontextmanager
    async def client(caller: Caller) -> AsyncIterator[httpx.AsyncClient]:
        async with fable.db.transaction() as session:
            _, key = await create_api_key(session, caller.user_id, "tests")
        transport = httpx.ASGITransport(create_app(fable))
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost/api", timeout=30,
                                     headers={"Authorization": f"Bearer {key}"}) as http:
            yield http

    return client
