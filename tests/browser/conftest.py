"""Browser fixtures: a real uvicorn on 127.0.0.1 serving the app, and Debian's Chromium.

The server runs in the session's event loop (the one the ``fable`` fixture's database pool
belongs to): ``support.servers.serve``, not a thread. Playwright's async API shares that
loop too. Each test gets a fresh browser context: its own cookies, nobody signed in.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import pytest
from playwright.async_api import Browser, Route, async_playwright, expect
from support.assistants import fable_on_fake_ollama, settle
from support.browser import Session, Watch
from support.fake_llm import FakeLLM
from support.pace import scaled
from support.servers import serve

from fable_core.config import Settings
from fable_core.runtime import Fable
from fable_web.app import create_app

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-quic", "--no-first-run", "--disable-sync",
]


@pytest.fixture(scope="session")
async def base_url(fable: Fable) -> AsyncIterator[str]:
    """``http://127.0.0.1:<port>`` of a uvicorn serving ``create_app(fable)``."""
    async with serve(create_app(fable)) as url:
        yield url


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        await chromium.close()


STRICTER_CSP = "style-src 'self'; script-src 'self'"


# The URLs a page may be loaded from: none under /api/, no file name with an extension (the
# scripts, styles and images). Matched in Playwright's driver, so an API call or an asset never
# makes the round trip to this process that a route handler costs (every request did).
_DOCUMENTS = re.compile(r"^https?://[^/?#]+(?!/api/)(?:/[^/?#.]*)*(?:[?#].*)?$")


async def _stricter_csp(route: Route) -> None:
    """Pages also get a policy without 'unsafe-inline' for styles: the UI must not need it.

    A second policy in the same header is enforced on top of the app's own (both must allow),
    and any violation is logged to the console, which the tests treat as an error.
    """
    if route.request.resource_type != "document":
        await route.continue_()
        return
    response = await route.fetch()
    headers = dict(response.headers)
    policy = headers.get("content-security-policy")
    assert policy, "the app sends no Content-Security-Policy"
    headers["content-security-policy"] = f"{policy}, {STRICTER_CSP}"
    await route.fulfill(response=response, headers=headers)


@asynccontextmanager
async def _session(browser: Browser, base_url: str, zone: str = "UTC") -> AsyncIterator[Session]:
    context = await browser.new_context(viewport={"width": 1280, "height": 800}, base_url=base_url,
                                        reduced_motion="reduce", locale="en-US", timezone_id=zone)
    context.set_default_timeout(scaled(10_000))  # waits stretch on a loaded machine (support.pace)
    expect.set_options(timeout=scaled(5_000))
    await context.route(_DOCUMENTS, _stricter_csp)
    page = await context.new_page()
    watch = Watch()
    page.on("console", watch.console)
    page.on("dialog", watch.dialog)
    page.on("pageerror", lambda error: watch.errors.append(f"uncaught: {error}"))
    try:
        yield Session(context, page, watch, base_url)
    finally:
        await context.close()


@pytest.fixture
def session_at(browser: Browser) -> Callable[[str], AbstractAsyncContextManager[Session]]:
    """``async with session_at(url) as ui:`` a fresh context like ``ui``'s, on another server."""
    return lambda url: _session(browser, url)


@pytest.fixture
def zoned(browser: Browser, base_url: str) -> Callable[[str], AbstractAsyncContextManager[Session]]:
    """``async with zoned("Asia/Tokyo") as ui:`` a fresh context like ``ui``'s whose browser is
    in that time zone, on the same server."""
    return lambda zone: _session(browser, base_url, zone)


@pytest.fixture
async def ui(browser: Browser, base_url: str) -> AsyncIterator[Session]:
    """A fresh context and page at 1280x800 (no transitions, so screenshots never catch one
    half-way); console errors and dialogs are collected."""
    async with _session(browser, base_url) as session:
        yield session


# --- the assistant: an app whose provider is the scripted fake Ollama (tests/support/fake_llm.py) -


@pytest.fixture(scope="session")
def chat_llm_state() -> FakeLLM:
    return FakeLLM()


@pytest.fixture
def chat_llm(chat_llm_state: FakeLLM) -> FakeLLM:
    """The fake Ollama's script, empty at the start of each test."""
    chat_llm_state.reset()
    return chat_llm_state


@pytest.fixture(scope="session")
async def chat_fable(settings: Settings, chat_llm_state: FakeLLM) -> AsyncIterator[Fable]:
    """A second Fable on the test database whose assistant talks to the fake Ollama over HTTP."""
    async with fable_on_fake_ollama(settings, chat_llm_state) as app:
        yield app


@pytest.fixture(scope="session")
async def chat_base_url(chat_fable: Fable) -> AsyncIterator[str]:
    async with serve(create_app(chat_fable)) as url:
        yield url


@pytest.fixture
async def chat_ui(browser: Browser, chat_base_url: str, chat_fable: Fable, chat_llm: FakeLLM) -> AsyncIterator[Session]:
    """Like ``ui``, against the app with the fake model. Afterwards the assistant's background
    work (answers, embeddings, the start-up backfill) settles before the tables are emptied."""
    async with _session(browser, chat_base_url) as session:
        yield session
    await settle(chat_fable)
