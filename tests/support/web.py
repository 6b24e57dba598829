"""Helpers the web tests share (imported by name; ``conftest`` holds only fixtures)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from starlette.applications import Starlette

from .users import PASSWORD

BASE = "http://localhost"
CLIENT_IP = "203.0.113.7"


def make_client(app: Starlette, ip: str = CLIENT_IP, **headers: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(ip, 4711))
    return httpx.AsyncClient(transport=transport, base_url=BASE, headers=headers)


@asynccontextmanager
async def signed_in(
    app: Starlette, username: str, password: str = PASSWORD
) -> AsyncIterator[httpx.AsyncClient]:
    """A same-origin client with a session for ``username``."""
    async with make_client(app, origin=BASE) as c:
        r = await c.post("/api/auth/login", json={"username": username, "password": password})
        assert r.status_code == 200, r.text
        yield c


def error_of(response: httpx.Response) -> dict[str, Any]:
    """The typed error body, checked for its exact shape."""
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message", "details"}, body
    return body["error"]
