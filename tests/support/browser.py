"""What a browser test holds: a page in its own context, what it logged, helpers to set up data."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.async_api import BrowserContext, ConsoleMessage, Dialog, Page

from .users import PASSWORD

# The browser tests' screenshots go to build/ (a run leaves docs/ as it was); `make screenshots`
# (UPDATE_SCREENSHOTS=1) writes the ones the README and docs show.
_ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = _ROOT / ("docs" if os.environ.get("UPDATE_SCREENSHOTS") else "build") / "screenshots"


@dataclass
class Watch:
    """What a page said that it should not: console errors, dialogs, uncaught exceptions."""

    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def console(self, message: ConsoleMessage) -> None:
        # A refused request (a wrong password, a spent link: what a test provokes) is logged by
        # Chromium as "Failed to load resource"; anything else at error level is a bug.
        if message.type == "error" and "Failed to load resource" not in message.text:
            self.errors.append(message.text)

    async def dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        await dialog.dismiss()


@dataclass
class Session:
    context: BrowserContext
    page: Page
    watch: Watch
    base_url: str

    async def register(self, username: str) -> None:
        """Create an account through the API (sets the session cookie for this context)."""
        response = await self.page.request.post(
            f"{self.base_url}/api/auth/register", data={"username": username, "password": PASSWORD},
            headers={"Origin": self.base_url},
        )
        assert response.status == 201, await response.text()

    async def api(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call the REST API with this context's cookies, as the page's fetch would
        (``body`` is the query string for GET)."""
        me = await self.page.request.get(f"{self.base_url}/api/auth/me")
        token = (await me.json())["csrf_token"]
        query = body if method == "GET" else None
        response = await self.page.request.fetch(
            f"{self.base_url}/api{path}", method=method, params=query,
            data=None if method == "GET" else body,
            headers={"Origin": self.base_url, "X-CSRF-Token": token},
        )
        assert response.ok, await response.text()
        return await response.json()  # type: ignore[no-any-return]

    async def shot(self, name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        await self.page.evaluate("document.getElementById('toasts')?.replaceChildren()")
        await self.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=False)
