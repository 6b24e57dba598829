"""Every page of the web UI, for the tests that visit them all (accessibility, phone widths).

Add a page here when you add one to the UI: ``PAGES`` is the list the axe run and the phone-width
check iterate. A path may name ``{note}``, ``{task}`` or ``{project}``: ``seed`` makes
them (among realistic content: every kind of markdown, tasks of every priority and status, events)
and fills them in. ``SIGNED_OUT`` are the pages someone who is not signed in sees.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any

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


_CODE = {
    "python": 'import asyncio\n\n@dataclass\nclass Bed:\n    """A raised bed."""\n    width: float = 1.2  # metres\n\n'
              'async def water(beds: list[Bed]) -> None:\n    for bed in beds:\n'
              '        if bed.width > 1 and not None:\n'
              '            await asyncio.sleep(0.5)\n        print(f"watered {bed!r}", 0x1F, True)\n',
    "javascript": 'export async function sow(seeds, { depth = 2 } = {}) {\n  const rows = [];\n'
                  '  for (const seed of seeds) rows.push(`${seed.name}: ${depth}cm`);\n'
                  '  return /^[a-z]+$/i.test(rows[0]) ? null : rows; // a regex, a template, a comment\n}\n',
    "sql": "SELECT bed, count(*) AS plants\nFROM planting\nWHERE sown_on >= DATE '2026-03-01' -- spring\n"
           "GROUP BY bed HAVING count(*) > 3\nORDER BY plants DESC;\n",
    "bash": '#!/usr/bin/env bash\nset -euo pipefail\nfor bed in north south; do\n'
            '  echo "checking $bed" && test -d "/srv/$bed" || exit 1  # fail loudly\ndone\n',
    "rust": 'fn main() {\n    let beds: Vec<u32> = vec![1, 2, 3];\n    match beds.len() {\n'
            '        0 => println!("none"),\n        n => println!("{n} beds"),\n    }\n}\n',
    "json": '{"beds": [{"name": "north", "width": 1.2, "covered": true, "notes": null}]}\n',
    "css": ".bed::before { content: \"🌱\"; color: #2f5d8a; margin: 0 .5rem !important; }\n",
    "diff": "--- a/plan.md\n+++ b/plan.md\n@@ -1,2 +1,2 @@\n-Old beds\n+New raised beds\n",
    "yaml": "garden:\n  beds: 3  # north, south, herbs\n  water: true\n  sown: 2026-03-01\n",
    "go": 'package main\n\nimport "fmt"\n\nfunc main() {\n'
          '\tfor i := 0; i < 3; i++ {\n\t\tfmt.Printf("bed %d\\n", i)\n\t}\n}\n',
}

_CALLOUTS = ("note", "abstract", "info", "todo", "tip", "success", "question", "warning", "failure", "danger",
             "bug", "example", "quote")


def _garden_body() -> str:
    """A note that uses everything the renderer draws: code in many languages (highlighted),
    callouts of every style, footnotes with back-links, aligned tables, wikilinks (found and
    missing), embeds, tags, task lists, maths and highlights."""
    code = "".join(f"### {language}\n\n```{language}\n{text}```\n\n" for language, text in _CODE.items())
    callouts = "".join(f"> [!{kind}] A {kind} callout\n> With *some* `code` and a [[Soil test]] link.\n\n"
                       for kind in _CALLOUTS)
    return ("# Plan\n\nA paragraph with a [[Missing]] link, a [[Soil test]] link, a #home/garden tag, "
            "==a highlight==, `inline code`, **bold**, ~~struck~~, $E = mc^2$ and a footnote[^soil] and "
            "another[^light].\n\n"
            "- [ ] Order compost\n- [x] Draw the beds\n  - [ ] Nested: check the hose\n\n"
            "| Left | Centre | Right | Default |\n|:-----|:------:|------:|---------|\n"
            "| north | 1.2 m | 3 | [[Soil test]] |\n| south | 0.9 m | 12 | `raised` |\n\n"
            "```\n" + "wide_code_line = " + "x" * 200 + "\n```\n\n" + code + callouts
            + "## Embedded\n\n![[Soil test]]\n\n![[Soil test#Results]]\n\n![[Nowhere]]\n\n"
            "> A plain quote, with a [link](https://example.org) and a footnote[^soil].\n\n"
            "[^soil]: Loam, slightly acid: see [[Soil test]].\n[^light]: Six hours of sun in June.\n")


def _long_body() -> str:
    sections = [f"## Week {n}\n\nWatered the beds on day {n}; the [[Soil test]] still holds. "
                + "The seedlings grew a little more, and the slugs stayed away. " * 6
                + f"#week{n}\n\n- item {n}.1\n- item {n}.2\n\n" for n in range(1, 41)]
    return "# A season's log\n\n" + "".join(sections)


async def seed(ui: Session, username: str = "ada") -> dict[str, int]:
    """Sign ``username`` up and give them content as a person would have: notes that use every
    piece of markdown the renderer draws (see ``_garden_body``), a long note, tasks of every
    priority and status (overdue, repeating, due today and later) with tags, in a project with a
    milestone, and events on the calendar."""
    await ui.register(username)
    soil = "# Soil test\n\nA pH of 6.5.\n\n## Results\n\n| pH | N |\n|--:|:--|\n| 6.5 | low |\n"
    await ui.api("POST", "/notes", {"title": "Soil test", "tags": ["garden"], "body": soil})
    note = await ui.api("POST", "/notes", {"title": "Garden plan", "body": _garden_body(),
                                           "tags": ["home", "garden", "planning"]})
    await ui.api("POST", "/notes", {"title": "A season's log", "body": _long_body(), "tags": ["garden", "log"]})
    project = await ui.api("POST", "/projects", {"title": "Kitchen", "goal": "A kitchen we like cooking in"})
    await ui.api("POST", f"/projects/{project['id']}/milestones", {"title": "Walls done"})
    task = await ui.api("POST", "/notes", {"title": "Measure the walls", "status": "todo", "priority": "high",
                                           "project_id": project["id"], "tags": ["kitchen"],
                                           "body": "See [[Garden plan]]."})
    today = datetime.now(UTC).date()  # the browser tests' zone

    def day(offset: int) -> str:
        return str(today + timedelta(days=offset))

    tasks: list[dict[str, Any]] = [
        {"title": "Order tiles", "status": "in_progress", "priority": "medium", "due_date": day(-3)},
        {"title": "Water the seedlings", "status": "todo", "priority": "low", "due_date": day(0),
         "recurrence_rule": "daily", "tags": ["garden"]},
        {"title": "Sharpen the knives", "status": "todo", "priority": "none", "due_date": day(5),
         "recurrence_rule": "every 2 weeks"},
        {"title": "Pick a worktop", "status": "done", "priority": "high", "due_date": day(-1)},
        {"title": "Ask about gas", "status": "cancelled", "priority": "medium"},
        {"title": "Paint the door", "status": "todo", "priority": "high", "due_date": day(-10),
         "tags": ["kitchen", "diy"]},
    ]
    for fields in tasks:
        await ui.api("POST", "/notes", {**fields, "project_id": project["id"]})
    for offset, title in ((0, "Plumber"), (2, "Tile shop")):
        start = datetime.combine(today + timedelta(days=offset), time(10))
        await ui.api("POST", "/events", {"title": title, "start": start.isoformat(), "location": "Kitchen"})
    await ui.api("POST", "/events", {"title": "Garden week", "start": day(0), "all_day": True})
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
