"""Helpers the OIDC tests share (imported by name; ``conftest`` holds only fixtures)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from starlette.applications import Starlette

from fable_core.runtime import Fable
from fable_web.app import create_app

from .servers import free_port, serve


def oidc_app(fable: Fable, issuer: str, base: str, **settings: Any) -> Starlette:
    return create_app(Fable(fable.settings.model_copy(update={
        "oidc_issuer": issuer, "oidc_client_id": "fable-test", "oidc_client_secret": "s3cret",
        "oidc_name": "Testcloak", "fable_base_url": base, **settings}), fable.db))


@asynccontextmanager
async def oidc_browser(fable: Fable, issuer: str, **settings: Any) -> AsyncIterator[httpx.AsyncClient]:
    """Fable wired to ``issuer``, served over real HTTP on 127.0.0.1; a client with a cookie jar
    (a browser that does not follow redirects) whose ``base_url`` is Fable's public URL."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with serve(oidc_app(fable, issuer, base, **settings), port) as url, \
            httpx.AsyncClient(base_url=url) as browser:
        yield browser
