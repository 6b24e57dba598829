"""Accessibility: axe-core on every page (support.page_tour.PAGES), light and dark, finds nothing critical
or serious; each view has its own title, a skip link, focus on its heading after navigation, and
j/k move through lists.

axe-core comes from npm into the test tools (scripts/install-test-tools) and is injected with an
init script, which the page's Content-Security-Policy does not govern.
"""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from playwright.async_api import Page, expect
from support.axe import AXE, severe_violations
from support.browser import Session
from support.page_tour import PAGES, SIGNED_OUT, paths, seed, visit

pytestmark = pytest.mark.browser

COLOURS = ["color-contrast", "link-in-text-block"]  # the rules whose answer depends on the theme


async def check(page: Page, path: str, signed_in: bool = True) -> list[str]:
    if signed_in:
        await visit(page, path)
    else:
        await page.goto(path)
        await expect(page.locator(".auth")).to_be_visible()
    found = [f"{path} [light] {line}" for line in await severe_violations(page)]
    # dark mode changes colours only: its run is the colour rules (a fraction of the time of all)
    await page.emulate_media(color_scheme="dark")
    found += [f"{path} [dark] {line}" for line in await severe_violations(page, COLOURS)]
    await page.emulate_media(color_scheme="light")
    return found


@pytest.fixture
async def axe_ui(ui: Session) -> Session:
    assert AXE.is_file(), "axe-core is missing: run ./scripts/install-test-tools"
    await ui.context.add_init_script(path=str(AXE))
    return ui


@pytest.mark.slow
async def test_axe_finds_nothing_serious_on_any_page_light_or_dark(axe_ui: Session) -> None:
    """Every page, signed out (before anyone has an account: the first account's page) and then
    with ``seed``'s content (code in ten languages, every callout, footnotes, aligned tables,
    embeds, tasks of every priority and status, a long note), in both colour schemes."""
    page = axe_ui.page
    refused: list[str] = []
    page.on("response", lambda r: refused.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    found = []
    for path in SIGNED_OUT:
        found += await check(page, path, signed_in=False)
        await expect(page.get_by_role("main")).to_have_count(1)  # the card is the page's main landmark
    # a signed-out visitor is not an error: no request of theirs is refused ("who am I?" is not asked)
    assert not refused, refused
    ids = await seed(axe_ui)
    for path in paths(ids):
        found += await check(page, path)
    await visit(page, paths(ids)[PAGES.index("/notes/{note}")])  # a theme picked against the system's
    for picked, system in (("dark", "light"), ("light", "dark")):
        await page.emulate_media(color_scheme=system)
        await page.evaluate("theme => { document.documentElement.dataset.theme = theme; }", picked)
        found += [f"/notes/{{note}} [{picked}, picked; the system {system}] {line}"
                  for line in await severe_violations(page, COLOURS)]
    await page.evaluate("() => { delete document.documentElement.dataset.theme; }")
    await page.emulate_media(color_scheme="light")
    await page.goto("/oauth/consent?client_id=nobody")  # a page of its own, signed in
    await expect(page.locator(".consent-card")).to_contain_text("cannot be used")
    await expect(page.get_by_role("main")).to_have_count(1)
    for scheme in ("light", "dark"):
        await page.emulate_media(color_scheme=scheme)
        found += [f"/oauth/consent [{scheme}] {line}" for line in await severe_violations(page)]
    assert not found, "\n".join(found)
    assert not axe_ui.watch.errors


async def test_skip_link_titles_focus_on_navigation_and_j_k_through_a_list(ui: Session) -> None:
    await seed(ui)
    for title in ("Bean list", "Compost notes"):
        await ui.api("POST", "/notes", {"title": title})
    page = ui.page
    await page.goto("/notes")
    await expect(page.get_by_role("heading", level=1)).to_have_text("Notes")
    await expect(page).to_have_title("Notes · Fable")
    assert await page.get_attribute("#app", "aria-live") is None  # pages are not announced as they render
    await page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to content")
    await expect(skip).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(page.locator("#main")).to_be_focused()

    rows = page.locator("#main .list > li a")
    await page.keyboard.press("j")
    await expect(rows.nth(0)).to_be_focused()
    await page.keyboard.press("j")
    await page.keyboard.press("j")
    await expect(rows.nth(2)).to_be_focused()
    await page.keyboard.press("k")
    await expect(rows.nth(1)).to_be_focused()
    title = (await rows.nth(1).locator(".title").inner_text()).strip()
    await page.keyboard.press("Enter")
    heading = page.get_by_role("heading", level=1)
    await expect(heading).to_have_text(title)
    await expect(heading).to_be_focused()  # a screen reader starts at the new page's name
    await expect(page).to_have_title(f"{title} · Fable")
    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Tasks").click()
    await expect(page.get_by_role("heading", level=1)).to_be_focused()
    await page.keyboard.press("j")
    await expect(page.locator("#main a.task-title").first).to_be_focused()  # the first task
    assert not ui.watch.errors


async def test_the_toolsets_chooser_and_its_dialog_find_nothing_serious_light_or_dark(axe_ui: Session) -> None:
    """Settings → API keys with the creation form's chooser open, then a key's Edit dialog."""
    page = axe_ui.page
    await axe_ui.register("ada")
    await axe_ui.api("POST", "/api-keys", {"name": "Cursor", "toolsets": ["default", "feeds"]})
    await visit(page, "/settings/keys")
    await page.locator("#key-toolsets summary").click()
    found = []
    for scheme in ("light", "dark"):
        await page.emulate_media(color_scheme=scheme)
        found += [f"chooser [{scheme}] {line}" for line in await severe_violations(page)]
    await page.get_by_role("button", name="Edit the tools “Cursor” is offered").click()
    await expect(page.get_by_role("dialog")).to_be_visible()
    for scheme in ("light", "dark"):
        await page.emulate_media(color_scheme=scheme)
        found += [f"dialog [{scheme}] {line}" for line in await severe_violations(page)]
    assert not found, "\n".join(found)
    assert not axe_ui.watch.errors


FOCUSED = """() => { const a = document.activeElement;
    if (!a || a === document.body) return "body";
    return a.getAttribute("aria-label") || a.dataset.date || a.textContent.trim().slice(0, 40) || a.tagName; }"""


async def focused(page: Page) -> str:
    """What has keyboard focus, as a person hears it (its label or its words), or "body"."""
    return str(await page.evaluate(FOCUSED))


async def test_focus_is_never_left_on_the_body_after_an_action(ui: Session) -> None:
    """Ticking a task (tasks, home, workspace), advancing a board card, closing the switcher and
    the shortcuts list, and the calendar's days by keyboard: focus stays where the person was."""
    ids = await seed(ui)
    page = ui.page

    await visit(page, "/tasks")  # the ticked task leaves its group: focus takes the next row's box
    box = page.get_by_role("checkbox", name="Done: Paint the door")
    await box.focus()
    await page.keyboard.press("Space")
    await expect(page.locator("#toasts")).to_contain_text("Completed “Paint the door”")
    await expect(box).not_to_be_focused()  # the rows are drawn anew
    await expect(page.locator("#task-groups input.check:focus")).to_have_count(1)
    next_box = await focused(page)
    assert next_box.startswith("Done: ") and next_box != "Done: Paint the door", next_box

    await page.keyboard.press("Control+k")  # the switcher gives focus back to the box it was opened from
    await expect(page.get_by_role("dialog", name="Quick switcher")).to_be_visible()
    assert await focused(page) == "Go to a note, or type > for commands"
    await page.keyboard.press("Escape")
    await expect(page.get_by_role("dialog")).to_have_count(0)
    await expect(page.get_by_role("checkbox", name=next_box, exact=True)).to_be_focused()

    link = page.locator("#main a.task-title").first
    await link.focus()
    await page.keyboard.press("?")  # and the shortcuts list, closed by Escape or by its button
    await expect(page.get_by_role("dialog", name="Keyboard shortcuts")).to_be_visible()
    await page.keyboard.press("Escape")
    await expect(link).to_be_focused()
    await page.keyboard.press("?")
    await page.get_by_role("dialog").get_by_role("button", name="Close").click()
    await expect(link).to_be_focused()

    await visit(page, "/")  # home: the ticked row stays, and so does focus
    await page.get_by_role("checkbox", name="Done: Order tiles").focus()
    await page.keyboard.press("Space")
    await expect(page.locator(".task.done", has_text="Order tiles")).to_be_visible()
    await expect(page.get_by_role("checkbox", name="Done: Order tiles")).to_be_focused()
    await page.keyboard.press("Control+k")  # opened from the page's heading (where a new page puts focus)
    await page.keyboard.press("Escape")
    await expect(page.get_by_role("checkbox", name="Done: Order tiles")).to_be_focused()

    await visit(page, f"/projects/{ids['project']}")  # the board: the advanced card keeps focus
    card = page.locator(f".board-card[data-task='{ids['task']}']")
    await card.get_by_role("button", name="→ Walls done").focus()
    await page.keyboard.press("Enter")
    await expect(page.locator(".column[data-milestone]:not([data-milestone=none])").locator(card)).to_be_visible()
    await expect(card).to_be_focused()

    await visit(page, f"/projects/{ids['project']}/workspace")  # the workspace's open tasks: the next row
    await page.get_by_role("checkbox", name="Done: Measure the walls").focus()
    await page.keyboard.press("Space")
    await expect(page.get_by_role("checkbox", name="Done: Measure the walls")).to_have_count(0)
    await expect(page.locator("#workspace-tasks input.check:focus")).to_have_count(1)

    await visit(page, "/calendar")  # one Tab stop for the days, arrows between them, Enter adds an event
    today = await page.evaluate("() => document.querySelector('.cal-day[tabindex=\"0\"]').dataset.date")
    cell = page.locator(".cal-day[tabindex='0']")
    await cell.focus()
    await page.keyboard.press("ArrowRight")
    await page.keyboard.press("ArrowDown")
    await page.keyboard.press("ArrowLeft")
    day = await focused(page)
    assert day == str(date.fromisoformat(today) + timedelta(days=7)), (today, day)
    await expect(page.locator(".cal-day[tabindex='0']")).to_have_count(1)
    await page.keyboard.press("Home")
    assert date.fromisoformat(await focused(page)).weekday() == 0
    await page.keyboard.press("End")
    await page.keyboard.press("Enter")
    week_day = date.fromisoformat(day)
    sunday = page.locator(f".cal-day[data-date='{week_day + timedelta(days=6 - week_day.weekday())}']")
    editor = page.get_by_role("dialog", name="New event")
    await expect(editor).to_be_visible()
    await page.keyboard.press("Escape")
    await expect(editor).to_have_count(0)
    await expect(sunday).to_be_focused()
    await page.keyboard.press("Enter")
    await page.keyboard.type("Picnic")
    await page.keyboard.press("Enter")
    await expect(sunday.locator(".cal-event")).to_contain_text(["Picnic"])
    await expect(sunday).to_be_focused()  # the grid was drawn anew: the same day has focus
    assert not ui.watch.errors
