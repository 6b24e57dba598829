"""Fixtures of the task rules' tests: alice's REST client (in process, with her API key)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from support.mcp_clients import make_key

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app


@pytest.fixture
async def rest(fable: Fable, alice: Caller) -> AsyncIterator[httpx.AsyncClient]:
    key = await make_key(fable, alice)
    transport = httpx.ASGITransport(app=create_app(fable))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost/api",
                                 headers={"Authorization": f"Bearer {key}"}) as client:
        yield client
