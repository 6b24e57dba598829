"""One note with every markdown feature, in the browser under the app's CSP: a task box ticked in
the rendered note saves the source, a code block's button copies it, an embed shows another
note, and a link to a heading opens that note scrolled to it."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import expect
from support.browser import Session

pytestmark = pytest.mark.browser

BODY = """Plans for the week, with ==the important part== and #kitchen/bread tags.

> [!tip] Before you start
> Read the recipe twice[^1].

- [ ] buy flour
- [x] clean the oven

```python
def knead(minutes: int) -> str:
    return "done" * minutes
```

Area of the tin: $\\pi r^2$. See [[Recipe#Bake|the baking step]] or https://example.org/bread.

![[Recipe#Dough]]

| step | time |
|------|------|
| rise | 2 h  |

[^1]: Or three times.
"""


async def test_a_note_with_every_feature_renders_and_works(ui: Session) -> None:
    page = ui.page
    await ui.context.grant_permissions(["clipboard-read", "clipboard-write"])
    await ui.register("alice")
    filler = "\n\n".join(f"Paragraph {i} of the long story before baking." for i in range(40))
    recipe = await ui.api("POST", "/notes", {"title": "Recipe", "body": f"## Dough\n\nflour and water\n\n{filler}"
                                             "\n\n## Bake\n\nforty minutes, hot"})
    note = await ui.api("POST", "/notes", {"title": "Week", "body": BODY})
    await page.goto(f"/notes/{note['id']}")
    body = page.locator("#note-body")
    await expect(body.locator(".callout-tip .callout-title")).to_have_text("Before you start")
    await expect(body.locator("pre.highlight .k").first).to_have_text("def")
    await expect(body.locator("math")).to_have_count(1)
    await expect(body.locator("mark")).to_have_text("the important part")
    await expect(body.locator("a.tag")).to_have_attribute("href", "/notes?tag=kitchen/bread")
    await expect(body.locator(".embed")).to_contain_text("flour and water")
    await expect(body.locator(".embed")).not_to_contain_text("forty minutes")
    await expect(body.locator(".footnotes")).to_contain_text("Or three times.")
    await ui.shot("markdown")

    # the task boxes save the source, one after another, each with the version the last one made
    boxes = body.locator("input.task-box")
    await boxes.nth(0).check()
    await boxes.nth(1).uncheck()
    await expect(page.get_by_text(re.compile(r"^v3 · edited"))).to_be_visible()
    saved = await ui.api("GET", f"/notes/{note['id']}")
    assert "- [x] buy flour\n- [ ] clean the oven" in saved["body"] and saved["version"] == 3
    await page.reload()
    await expect(page.locator("#note-body input.task-box").first).to_be_checked()
    await expect(page.locator("#note-body input.task-box").nth(1)).not_to_be_checked()

    # the copy button copies the code
    await page.locator("#note-body .code-copy").click()
    copied = await page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("def knead(minutes: int) -> str:")

    # a footnote's link scrolls within the note (the browser's, not a new render)
    await page.locator("#note-body sup.footnote-ref a").click()
    await expect(page).to_have_url(re.compile(rf"/notes/{note['id']}#fn1$"))
    await expect(page.locator("#fn1")).to_be_in_viewport()

    # the heading link opens the other note at that heading
    await page.locator("#note-body").get_by_role("link", name="the baking step").click()
    await expect(page).to_have_url(re.compile(rf"/notes/{recipe['id']}#h-bake$"))
    await expect(page.locator("#h-bake")).to_be_in_viewport()
    assert ui.watch.errors == []
