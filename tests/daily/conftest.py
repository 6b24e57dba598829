"""Fixtures for the daily domains (weather, moments, the profile): a fake weather service at
the wire, a Fable whose weather comes from it, the web app of that Fable on 127.0.0.1, and
clients of it holding a user's API key."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from support.daily import TIMEOUT, Api, Call
from support.fables import fable_with
from support.pace import scaled
from support.servers import serve, serve_in_thread
from support.users import quick_user
from support.weather import FakeWeather, weather_app

from fable_core.config import Settings
from fable_core.identity.accounts import create_api_key
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app

alice = quick_user("alice")
bob = quick_user("bob")


@pytest.fixture(scope="session")
def weather_state() -> FakeWeather:
    return FakeWeather()


@pytest.fixture
def weather(weather_state: FakeWeather) -> FakeWeather:
    """The fake service's script, empty at the start of each test."""
    weather_state.reset()
    return weather_state


@pytest.fixture(scope="session")
def weather_url(weather_state: FakeWeather) -> Iterator[str]:
    with serve_in_thread(weather_app(weather_state)) as url:
        yield url


@pytest.fixture(scope="session")
async def daily_fable(settings: Settings, weather_url: str) -> AsyncIterator[Fable]:
    """A Fable on the test database whose weather services are the fake."""
    async with fable_with(settings, migrate=False, fable_nominatim_url=weather_url,
                          fable_open_meteo_url=weather_url + "/", fable_weather_timeout=TIMEOUT) as app:
        yield app


@pytest.fixture(scope="session")
async def daily_url(daily_fable: Fable) -> AsyncIterator[str]:
    async with serve(create_app(daily_fable)) as url:
        yield url


@pytest.fixture
def api(daily_fable: Fable, daily_url: str) -> Api:
    """``async with api(alice) as http:`` an HTTP client of the app with a write key of alice's."""

    @asynccontextmanager
    async def client(caller: Caller) -> AsyncIterator[httpx.AsyncClient]:
        async with daily_fable.db.transaction() as session:
            _, key = await create_api_key(session, caller.user_id, "tests")
        async with httpx.AsyncClient(base_url=daily_url + "/api", timeout=scaled(10),
                                     headers={"Authorization": f"Bearer {key}"}) as http:
            yield http

    return client


@pytest.fixture
def call(daily_fable: Fable, alice: Caller) -> Call:
    """``await call("record_moment", text=..., as_=bob)``: the dispatcher of the daily Fable."""

    async def run(name: str, as_: Caller | None = None, **arguments: object) -> dict[str, Any]:
        return await daily_fable.call(name, arguments, as_ or alice)

    return run
