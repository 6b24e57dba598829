"""Accessibility: axe-core on every page (support.page_tour.PAGES), light and dark, finds nothing critical
or serious; each view has its own title, a skip link, focus on its heading after navigation, and
j/k move through lists.

axe-core comes from npm into the test tools (scripts/install-test-tools) and is injected with an
init script, which the page's Content-Security-Policy does not govern.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, expect
from support.browser import Session
from support.page_tour import SIGNED_OUT, paths, seed, visit

pytestmark = pytest.mark.browser

AXE = Path(__file__).resolve().parents[2] / ".tools" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
SEVERE = ("critical", "serious")


async def severe_violations(page: Page, rules: list[str] | None = None) -> list[str]:
    """axe's critical and serious violations on the page as it is now (only ``rules`` if given)."""
    result: list[dict[str, Any]] = await page.evaluate("""async (rules) => {
        const options = {resultTypes: ['violations'], ...(rules ? {runOnly: {type: 'rule', values: rules}} : {})};
        const r = await axe.run(document, options);
        return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(
            n => n.target.join(' ') + ' ' + (n.failureSummary || '').split('\\n').slice(1).join(' '))}));
    }""", rules)
    return [f"{v['impact']} {v['id']} ({v['help']}): {json.dumps(v['nodes'][:4])}"
            for v in result if v["impact"] in SEVERE]


async def check(page: Page, path: str, signed_in: bool = True) -> list[str]:
    if signed_in:
        await visit(page, path)
    else:
        await page.goto(path)
        await expect(page.locator(".auth")).to_be_visible()
    found = [f"{path} [light] {line}" for line in await severe_violations(page)]
    # dark mode changes colours only: its run is the colour rules (a fraction of the time of all)
    await page.emulate_media(color_scheme="dark")
    found += [f"{path} [dark] {line}" for line in await severe_violations(page, ["color-contrast"])]
    await page.emulate_media(color_scheme="light")
    return found


@pytest.fixture
async def axe_ui(ui: Session) -> Session:
    assert AXE.is_file(), "axe-core is missing: run ./scripts/install-test-tools"
    await ui.context.add_init_script(path=str(AXE))
    return ui


async def test_axe_finds_nothing_serious_on_any_page_light_or_dark(axe_ui: Session) -> None:
    page = axe_ui.page
    found = []
    for path in SIGNED_OUT:
        found += await check(page, path, signed_in=False)
    ids = await seed(axe_ui)
    for path in paths(ids):
        found += await check(page, path)
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
    await expect(page.get_by_role("link", name="Measure the walls")).to_be_focused()
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
