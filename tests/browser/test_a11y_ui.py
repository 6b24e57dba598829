"""Accessibility: axe-core on every page (page_tour.PAGES), light and dark, finds nothing critical
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
from browser_session import Session
from page_tour import SIGNED_OUT, paths, seed, visit
from playwright.async_api import Page, expect

pytestmark = pytest.mark.browser

AXE = Path(__file__).resolve().parents[2] / ".tools" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
SEVERE = ("critical", "serious")


async def severe_violations(page: Page) -> list[str]:
    """axe's critical and serious violations on the page as it is now, one line each."""
    result: list[dict[str, Any]] = await page.evaluate("""async () => {
        const r = await axe.run(document, {resultTypes: ['violations']});
        return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(
            n => n.target.join(' ') + ' ' + (n.failureSummary || '').split('\\n').slice(1).join(' '))}));
    }""")
    return [f"{v['impact']} {v['id']} ({v['help']}): {json.dumps(v['nodes'][:4])}"
            for v in result if v["impact"] in SEVERE]


async def check(page: Page, path: str, signed_in: bool = True) -> list[str]:
    if signed_in:
        await visit(page, path)
    else:
        await page.goto(path)
        await expect(page.locator(".auth")).to_be_visible()
    found = []
    for scheme in ("light", "dark"):
        await page.emulate_media(color_scheme=scheme)
        found += [f"{path} [{scheme}] {line}" for line in await severe_violations(page)]
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
