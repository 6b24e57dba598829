"""OAuth fixtures: the whole web app under uvicorn for the session, its URL pinned as this
Fable's public URL in each test (the issuer and resource are the public URL, never a Host)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from support.pace import scaled
from support.servers import serve

from fable_core.admin import instance
from fable_core.runtime import Fable
from fable_web.app import create_app


@pytest.fixture(scope="session")
async def server_url(fable: Fable) -> AsyncIterator[str]:
    async with serve(create_app(fable)) as url:
        yield url


@pytest.fixture
async def oauth_url(fable: Fable, server_url: str) -> str:
    """The server's URL, pinned as the public URL (the test database starts without one)."""
    async with fable.db.transaction() as session:
        await instance.set_public_url(session, server_url)
    return server_url


@pytest.fixture
async def http(oauth_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """A client without cookies: what an OAuth client is."""
    async with httpx.AsyncClient(base_url=oauth_url, timeout=scaled(30)) as c:
        yield c
