"""Browser fixtures: a real uvicorn on 127.0.0.1 serving the app, and Debian's Chromium.

The server runs in the session's event loop (the one the ``fable`` fixture's database pool
belongs to), so it is started as a task, not in a thread. Playwright's async API shares that
loop too. Each test gets a fresh browser context: its own cookies, nobody signed in.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
import uvicorn
from browser_session import Session, Watch
from playwright.async_api import Browser, Route, async_playwright

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
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(fable), log_level="warning", lifespan="on", access_log=False)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    await task
    sock.close()


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        await chromium.close()


STRICTER_CSP = "style-src 'self'; script-src 'self'"


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


@pytest.fixture
async def ui(browser: Browser, base_url: str) -> AsyncIterator[Session]:
    """A fresh context and page at 1280x800 (no transitions, so screenshots never catch one
    half-way); console errors and dialogs are collected."""
    context = await browser.new_context(viewport={"width": 1280, "height": 800}, base_url=base_url,
                                        reduced_motion="reduce", locale="en-US", timezone_id="UTC")
    context.set_default_timeout(10_000)
    await context.route("**/*", _stricter_csp)
    page = await context.new_page()
    watch = Watch()
    page.on("console", watch.console)
    page.on("dialog", watch.dialog)
    page.on("pageerror", lambda error: watch.errors.append(f"uncaught: {error}"))
    yield Session(context, page, watch, base_url)
    await context.close()
