"""The graph page in a real Chromium: notes, tags and projects drawn on a canvas by the
vendored force-graph (under the strict CSP), filtered by tag, tags hidden, a click on a node
opens its peek panel (Open goes to the note); a node found by name opens it from the keyboard;
the layout's forces tuned and frozen; labels never overlapping. A screenshot goes to
docs/screenshots."""

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
    peek = page.locator("#graph-peek")
    await expect(peek).to_be_visible()  # a click peeks, it does not leave the graph
    await expect(peek.get_by_role("heading", level=2)).to_have_text("Soil")
    await expect(page).to_have_url(re.compile(r"/graph\?tag=garden$"))
    await page.keyboard.press("Escape")
    await expect(peek).to_be_hidden()
    await expect(page.locator("#graph-canvas")).to_be_focused()
    await page.mouse.click(point[0], point[1])
    await peek.get_by_role("link", name="Open").click()
    await expect(page).to_have_url(re.compile(rf"/notes/{soil['id']}$"))
    assert ui.watch.errors == []


LABELS_OVERLAP = """() => {
  const boxes = document.getElementById('graph-canvas').labels;
  const meet = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
  let overlapping = 0;
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) if (meet(boxes[i], boxes[j])) overlapping++;
  }
  return [boxes.length, overlapping];
}"""


async def test_graph_peek_panel_physics_and_labels(ui: Session) -> None:
    page = ui.page
    await ui.register("ida")
    soil = await ui.api("POST", "/notes", {"title": "Soil", "tags": ["garden"],
                                           "body": "Loam and *compost*.\n\n<script>window.pwned = 1</script>"
                                                   "<img src=x onerror=\"window.pwned = 2\">"})
    await ui.api("POST", "/notes", {"title": "Tomatoes", "body": "Grow in [[Soil]]."})
    for i in range(25):  # titles long enough to collide when drawn side by side
        await ui.api("POST", "/notes", {"title": f"A rather long title for a crowded note number {i}",
                                        "body": "[[Soil]]"})
    await page.goto("/graph")
    await expect(page.locator("#graph-canvas canvas")).to_be_visible()

    # the pure placement: a later label meeting an earlier one is left out; the limit holds
    kept = await page.evaluate("""async () => {
        const { placeLabels } = await import('/js/widgets/labels.js');
        const boxes = [{ x: 0, y: 0, w: 10, h: 4, id: 'a' }, { x: 5, y: 2, w: 10, h: 4, id: 'b' },
                       { x: 11, y: 0, w: 5, h: 4, id: 'c' }, { x: 0, y: 10, w: 3, h: 3, id: 'd' }];
        return [placeLabels(boxes).map((b) => b.id), placeLabels(boxes, 1).map((b) => b.id)];
    }""")
    assert kept == [["a", "c", "d"], ["a"]]
    await expect(page.locator("#graph-canvas[data-settled=true]")).to_have_count(1, timeout=scaled(20_000))
    drawn, overlapping = await page.evaluate(LABELS_OVERLAP)
    assert drawn >= 2 and overlapping == 0
    await page.evaluate("() => { document.getElementById('graph-canvas').graph.zoom(0.3); }")  # all crowded together
    await page.wait_for_timeout(200)
    drawn_far, overlapping = await page.evaluate(LABELS_OVERLAP)
    assert overlapping == 0 and drawn_far < drawn

    # the keyboard's way in: find a node by name, Enter peeks it, Esc closes and gives focus back
    finder = page.get_by_role("searchbox", name="Find a node in the graph")
    await finder.fill("soil")
    await expect(page.locator("#graph-matches button")).to_have_count(1)
    await finder.press("Enter")
    peek = page.get_by_role("complementary", name="Soil")
    await expect(peek).to_be_visible()
    await expect(peek.get_by_role("heading", level=2)).to_be_focused()
    await expect(peek.locator(".graph-peek-excerpt")).to_contain_text("Loam and compost.")
    await expect(peek.locator(".graph-peek-excerpt em")).to_have_text("compost")
    await expect(peek.locator(".graph-peek-tags")).to_have_text("#garden")
    await expect(peek.locator(".graph-peek-links li")).to_have_count(27)  # 26 notes and the tag
    assert await page.evaluate("window.pwned") is None  # the body's script and handler never ran
    await peek.get_by_role("button", name=re.compile("^Tomatoes")).click()  # a link peeks its node
    await expect(page.get_by_role("complementary", name="Tomatoes")).to_be_visible()
    await page.keyboard.press("Escape")
    await expect(page.locator("#graph-peek")).to_be_hidden()
    await expect(finder).to_be_focused()

    # physics: the forces follow the sliders; frozen, nothing moves
    await page.locator("#graph-physics summary").click()
    await page.locator("#graph-link-distance").fill("90")
    assert await page.evaluate("document.getElementById('graph-canvas').graph.d3Force('link').distance()({})") == 90
    await page.locator("#graph-repulsion").fill("120")
    assert await page.evaluate("document.getElementById('graph-canvas').graph.d3Force('charge').strength()({})") == -120
    await page.locator("#graph-centre").fill("50")
    await page.get_by_label("Freeze layout").check()
    await expect(page.locator("#graph-canvas")).to_have_attribute("data-frozen", "true")
    where = "document.getElementById('graph-canvas').graph.graphData().nodes.map((n) => [n.x, n.y])"
    before = await page.evaluate(where)
    await page.locator("#graph-repulsion").fill("250")
    await page.wait_for_timeout(300)
    assert await page.evaluate(where) == before
    await page.get_by_label("Freeze layout").uncheck()
    await page.wait_for_timeout(300)
    assert await page.evaluate(where) != before  # the stronger repulsion spreads them again
    assert soil["id"]
    assert ui.watch.errors == []
