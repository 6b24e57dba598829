"""OIDC fixtures: a real OpenID provider (oidc-provider-mock, a Flask app on a thread on
127.0.0.1) and Fable apps wired to it. Fable is served over real HTTP on 127.0.0.1 (in this
event loop); the provider is reached over real HTTP by Fable (discovery, token, keys) and by the
test's "browser" (the consent form)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from support.oidc import oidc_browser

from fable_core.runtime import Fable

_subjects = itertools.count(1)


@pytest.fixture(scope="session")
def provider() -> Iterator[str]:
    """The provider's issuer URL."""
    import oidc_provider_mock  # here, not at collection: it imports Authlib's deprecated authlib.jose

    with oidc_provider_mock.run_server_in_thread(require_nonce=True) as server:
        yield f"http://localhost:{server.server_port}"


@pytest.fixture
def person(provider: str) -> Callable[..., str]:
    """``person(email=..., email_verified=True, preferred_username=...)``: a new person at the
    provider, with these claims; their subject."""

    def make(**claims: Any) -> str:
        sub = f"person-{next(_subjects)}-{id(claims)}"
        r = httpx.put(f"{provider}/users/{quote(sub)}", json=claims)
        assert r.status_code == 204, r.text
        return sub

    return make


@pytest.fixture
async def browser(fable: Fable, provider: str) -> AsyncIterator[httpx.AsyncClient]:
    async with oidc_browser(fable, provider) as c:
        yield c
