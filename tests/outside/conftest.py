"""Fixtures for the outside world's domains (web search, research, images, feeds): a fake
SearXNG, a fake web site and a fake Ollama at the wire, a Fable wired to all three (the site's
host let through the SSRF guard by ``FABLE_FETCH_ALLOW_HOSTS``, as an operator would for an
intranet), its web app on 127.0.0.1, and clients of it holding a user's API key."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from support.fables import fable_with, ollama_at
from support.fake_llm import FakeLLM, ollama_app
from support.outside import TIMEOUT, Api, Call
from support.pace import scaled
from support.searxng import FakeSearxng, searxng_app
from support.servers import serve, serve_in_thread
from support.users import quick_user
from support.web_site import FakeSite, web_site_app

from fable_core.config import Settings
from fable_core.identity.accounts import create_api_key
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app

alice = quick_user("alice")
bob = quick_user("bob")


@pytest.fixture(scope="session")
def searxng_state() -> FakeSearxng:
    return FakeSearxng()


@pytest.fixture
def searxng(searxng_state: FakeSearxng) -> FakeSearxng:
    """The fake SearXNG's script, empty at the start of each test."""
    searxng_state.reset()
    return searxng_state


@pytest.fixture(scope="session")
def searxng_url(searxng_state: FakeSearxng) -> Iterator[str]:
    with serve_in_thread(searxng_app(searxng_state)) as url:
        yield url


@pytest.fixture(scope="session")
def site_state() -> FakeSite:
    return FakeSite()


@pytest.fixture
def site(site_state: FakeSite) -> FakeSite:
    """The fake web site's pages, none at the start of each test."""
    site_state.reset()
    return site_state


@pytest.fixture(scope="session")
def site_url(site_state: FakeSite) -> Iterator[str]:
    with serve_in_thread(web_site_app(site_state)) as url:
        yield url


@pytest.fixture(scope="session")
def outside_llm_state() -> FakeLLM:
    return FakeLLM()


@pytest.fixture
def llm(outside_llm_state: FakeLLM) -> FakeLLM:
    """The fake model's script, empty at the start of each test."""
    outside_llm_state.reset()
    return outside_llm_state


@pytest.fixture(scope="session")
def outside_llm_url(outside_llm_state: FakeLLM) -> Iterator[str]:
    with serve_in_thread(ollama_app(outside_llm_state)) as url:
        yield url


@pytest.fixture(scope="session")
def outside_settings(settings: Settings, searxng_url: str, site_url: str, outside_llm_url: str) -> Settings:
    return settings.model_copy(update={
        "searxng_url": searxng_url, "fable_searxng_timeout": TIMEOUT,
        "fable_fetch_allow_hosts": [site_url.removeprefix("http://")],
        **ollama_at(outside_llm_url)})


@pytest.fixture(scope="session")
async def outside_fable(outside_settings: Settings) -> AsyncIterator[Fable]:
    """A Fable on the test database whose SearXNG, web and model are the fakes."""
    async with fable_with(outside_settings, migrate=False) as app:
        yield app


@pytest.fixture(scope="session")
async def outside_url(outside_fable: Fable) -> AsyncIterator[str]:
    async with serve(create_app(outside_fable)) as url:
        yield url


@pytest.fixture
def api(outside_fable: Fable, outside_url: str) -> Api:
    """``async with api(alice) as http:`` an HTTP client of the app with a write key of alice's."""

    @asynccontextmanager
    async def client(caller: Caller) -> AsyncIterator[httpx.AsyncClient]:
        async with outside_fable.db.transaction() as session:
            _, key = await create_api_key(session, caller.user_id, "tests")
        async with httpx.AsyncClient(base_url=outside_url + "/api", timeout=scaled(10),
                                     headers={"Authorization": f"Bearer {key}"}) as http:
            yield http

    return client


@pytest.fixture
def call(outside_fable: Fable, alice: Caller) -> Call:
    """``await call("web_search", query=..., as_=bob)``: the dispatcher of the outside Fable."""

    async def run(name: str, as_: Caller | None = None, **arguments: object) -> dict[str, Any]:
        return await outside_fable.call(name, arguments, as_ or alice)

    return run
