"""The graph page in a real Chromium: notes, tags and projects drawn on a canvas by the
vendored force-graph (under the strict CSP), filtered by tag, tags hidden, a click on a node
opens its note. A screenshot goes to docs/screenshots."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import expect
from support.browser import Session
from support.pace import scaled

pytestmark = pytest.mark.browser


async def test_graph_draws_filters_and_opens_a_note(ui: Session) -> None:
    page = ui.page
    await ui.register("gus")
    project = await ui.api("POST", "/projects", {"title": "Garden"})
    soil = await ui.api("POST", "/notes", {"title": "Soil", "tags": ["garden"]})
    await ui.api("POST", "/notes", {"title": "Tomatoes", "body": "[[Soil]]", "tags": ["garden/veg"],
                                    "project_id": project["id"]})
    await ui.api("POST", "/notes", {"title": "Taxes", "tags": ["admin"]})
    await page.goto("/graph")
    canvas = page.locator("#graph-canvas canvas")
    await expect(canvas).to_be_visible()
    await expect(page.locator("#graph-summary")).to_have_text("3 notes, 4 tags and projects, 6 links.")
    await page.wait_for_timeout(300)  # let the simulation spread the nodes
    await ui.shot("graph")

    await page.locator("#graph-tag").fill("garden")
    await page.get_by_role("button", name="Filter").click()
    await expect(page).to_have_url(re.compile(r"/graph\?tag=garden$"))
    await expect(page.locator("#graph-summary")).to_have_text("2 notes, 3 tags and projects, 5 links.")
    await page.locator("#graph-show-tags").uncheck()
    count = await page.evaluate("document.getElementById('graph-canvas').graph.graphData().nodes.length")
    assert count == 3  # two notes and the project

    await expect(page.locator("#graph-canvas[data-settled=true]")).to_have_count(1, timeout=scaled(20_000))
    point = await page.evaluate(f"""() => {{
        const g = document.getElementById('graph-canvas').graph;
        const n = g.graphData().nodes.find((n) => n.id === 'n{soil["id"]}');
        const p = g.graph2ScreenCoords(n.x, n.y);
        const box = document.querySelector('#graph-canvas canvas').getBoundingClientRect();
        return [box.left + p.x, box.top + p.y];
    }}""")
    await page.mouse.click(point[0], point[1])
    await expect(page).to_have_url(re.compile(rf"/notes/{soil['id']}$"))
    assert ui.watch.errors == []
