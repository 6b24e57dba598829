"""Helpers the logs tests share (imported by name; ``conftest`` holds only fixtures)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
from starlette.applications import Starlette

from fable_core.db.models import AppLog

from .users import PASSWORD

BASE = "http://localhost"
Rows = Callable[..., Awaitable[list[AppLog]]]
Call = Callable[..., Awaitable[dict[str, Any]]]


def client_of(app: Starlette, **headers: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=("203.0.113.9", 4711))
    return httpx.AsyncClient(transport=transport, base_url=BASE, headers={"origin": BASE, **headers})


@asynccontextmanager
async def signed_in(app: Starlette, username: str) -> AsyncIterator[httpx.AsyncClient]:
    async with client_of(app) as c:
        r = await c.post("/api/auth/login", json={"username": username, "password": PASSWORD})
        assert r.status_code == 200, r.text
        yield c


