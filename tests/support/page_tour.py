"""Every page of the web UI, for the tests that visit them all (accessibility, phone widths).

Add a page here when you add one to the UI: ``PAGES`` is the list the axe run and the phone-width
check iterate. A path may name ``{note}``, ``{task}`` or ``{project}``: ``seed`` makes one of
each and fills them in. ``SIGNED_OUT`` are the pages someone who is not signed in sees.
"""

from __future__ import annotations

from playwright.async_api import Page, expect

from .browser import Session

PAGES = [
    "/",
    "/notes",
    "/notes/{note}",
    "/notes/new",
    "/tasks",
    "/calendar",
    "/projects",
    "/projects/{project}",
    "/projects/{project}/workspace",
    "/tags",
    "/graph",
    "/trash",
    "/journal",
    "/chat",
    "/moments",
    "/feeds",
    "/research",
    "/shared",
    "/settings",
    *(f"/settings/{tab}" for tab in ("preferences", "profile", "calendar-sync", "keys", "connections", "import",
                                     "data", "users", "oauth-clients", "instance", "audit", "models")),
]

SIGNED_OUT = ["/login", "/register", "/forgot-password", "/reset-password?token=x"]


async def seed(ui: Session, username: str = "ada") -> dict[str, int]:
    """Sign ``username`` up and give them a note (with code, a table and a #tag in its text), a task and a project."""
    await ui.register(username)
    body = ("# Plan\n\nA paragraph with a [[Missing]] link, for the #garden.\n\n"
            "```\n" + "wide_code_line = " + "x" * 200 + "\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    note = await ui.api("POST", "/notes", {"title": "Garden plan", "body": body, "tags": ["home"]})
    project = await ui.api("POST", "/projects", {"title": "Kitchen", "goal": "A kitchen we like cooking in"})
    task = await ui.api("POST", "/notes", {"title": "Measure the walls", "status": "todo", "priority": "high",
                                           "project_id": project["id"]})
    return {"note": note["id"], "task": task["id"], "project": project["id"]}


def paths(ids: dict[str, int]) -> list[str]:
    return [page.format(**ids) for page in PAGES]


async def visit(page: Page, path: str) -> None:
    """Open ``path`` as a person would: the first page with a load, the next ones through the
    app's router (no reload), then wait until the view has its content (``#main`` not busy)."""
    if await page.locator("#main").count():
        await page.evaluate(
            "path => { history.pushState(null, '', path); dispatchEvent(new PopStateEvent('popstate')); }", path)
    else:
        await page.goto(path)
    await expect(page.locator("#main:not([aria-busy]) > *").first).to_be_visible()
