"""axe-core in a browser test: where the test tools put it, and its severe violations on a page.

It comes from npm into the test tools (scripts/install-test-tools) and is injected with an init
script (``context.add_init_script(path=str(AXE))`` before the page loads), which the page's
Content-Security-Policy does not govern."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from playwright.async_api import Page

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
