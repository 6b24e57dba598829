"""Web UI benchmark: pages interactive and the editor's preview, in headless Chromium, at 10k notes.

    python -m bench.ui_pages [--notes 10000] [--runs 20] [--no-write]

One fresh embedded PostgreSQL in a temporary directory; one user holding ``--notes`` corpus
notes (``bench.rest.bulk_load``: a third of them tasks), the app under uvicorn on 127.0.0.1 and
Debian's Chromium driven by Playwright, signed in as that user. Timed, after a warm-up visit
(so the browser has every file and revalidates it: a 304 per file, the service worker in place):

- **load**: a full page load of ``/notes`` and of ``/tasks``, from navigation start to the view
  being interactive: the shell's ``#main`` no longer ``aria-busy`` (the view has rendered what it
  awaited), read in the page as ``performance.now()`` (navigation start is 0);
- **in-app**: the same views opened from another page through the app's router (no reload);
- **keystroke to preview**: a character typed in the editor of a note, from the key event to the
  live preview's DOM changing (debounce, ``POST /api/render``, insertion).

Targets (issue 18): notes and tasks pages interactive < 500 ms warm, keystroke to preview
< 100 ms. Results go to the "ui_pages" section of docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import text

from bench.harness.bench import Bench, Measured, Unavailable
from bench.harness.corpus import Corpus
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.report import Figure
from bench.harness.session import on_one_fable
from bench.rest import bulk_load
from fable_core.runtime import Fable
from tests.support.servers import serve

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    notes: int = 10_000
    runs: int = option(20, "samples of each measure")


CHROMIUM = "/usr/bin/chromium"
PASSWORD = "a long bench password"

# Every time #main stops being busy, the moment (ms since navigation start) goes to window.__ready.
_WATCH_READY = """
new MutationObserver(() => {
  const main = document.getElementById("main");
  if (main && !main.hasAttribute("aria-busy") && main.firstElementChild) window.__ready = performance.now();
}).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["aria-busy"] });
"""
_ROUTE = "p => { window.__ready = 0; window.__start = performance.now(); history.pushState(null, '', p);" \
         " dispatchEvent(new PopStateEvent('popstate')); }"


@dataclass
class Result:
    notes: int
    tasks: int
    timings: dict[str, list[float]] = field(default_factory=dict)  # measure -> ms

    def p(self, name: str, q: float) -> float:
        ms = sorted(self.timings[name])
        return ms[min(len(ms) - 1, round(q * (len(ms) - 1)))]


async def _world(fable: Fable, notes: int) -> tuple[str, int, int]:
    from fable_core.identity.accounts import create_user

    async with fable.db.transaction() as s:
        user = await create_user(s, "reader", PASSWORD)
    await bulk_load(fable, user.id, Corpus(seed=5), notes)
    async with fable.db.engine.begin() as conn:
        await conn.execute(text("ANALYZE"))
        total = (await conn.execute(text("SELECT count(*) FROM notes"))).scalar_one()
        tasks = (await conn.execute(text("SELECT count(*) FROM notes WHERE status IS NOT NULL"))).scalar_one()
        some = (await conn.execute(text("SELECT max(id) FROM notes WHERE status IS NULL"))).scalar_one()
    return str(some), total, tasks


async def run(fable: Fable, notes: int, runs: int) -> Result:
    from playwright.async_api import Page, async_playwright

    from fable_web.app import create_app

    note_id, total, tasks = await _world(fable, notes)
    result = Result(total, tasks, {name: [] for name in (
        "/notes load", "/tasks load", "/notes in-app", "/tasks in-app", "keystroke to preview")})

    async def ready(page: Page) -> float:
        await page.wait_for_function("window.__ready > 0", polling="raf")
        return float(await page.evaluate("window.__ready"))

    async def load(page: Page, path: str) -> float:
        await page.goto(path, wait_until="commit")
        return await ready(page)

    async def in_app(page: Page, path: str) -> float:
        await page.evaluate(_ROUTE, path)
        return await ready(page) - float(await page.evaluate("window.__start"))

    async def keystroke(page: Page) -> float:
        await page.evaluate("""() => {
            window.__typed = 0; window.__previewed = 0;
            const source = document.getElementById('note-source');
            source.addEventListener('keydown', () => { window.__typed = performance.now(); }, { once: true });
            new MutationObserver((_, o) => { window.__previewed = performance.now(); o.disconnect(); })
              .observe(document.getElementById('preview'), { subtree: true, childList: true, characterData: true });
        }""")
        await page.locator("#note-source").press("x")
        await page.wait_for_function("window.__previewed > 0", polling="raf")
        return float(await page.evaluate("window.__previewed - window.__typed"))

    async with serve(create_app(fable)) as url, async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        # bypass_csp: Playwright polls its predicates with eval, which the app's policy refuses
        context = await browser.new_context(base_url=url, viewport={"width": 1280, "height": 800}, bypass_csp=True)
        await context.add_init_script(_WATCH_READY)
        page = await context.new_page()
        login = await page.request.post(f"{url}/api/auth/login", headers={"Origin": url},
                                        data={"username": "reader", "password": PASSWORD})
        assert login.ok, await login.text()
        for path in ("/notes", "/tasks", "/"):  # warm-up: files cached, the service worker installed
            await load(page, path)
        await page.evaluate("navigator.serviceWorker.ready")
        for _ in range(runs):  # the measures take turns: the machine drifts
            for path in ("/notes", "/tasks"):
                result.timings[f"{path} load"].append(await load(page, path))
                await in_app(page, "/")
                result.timings[f"{path} in-app"].append(await in_app(page, path))
        await load(page, f"/notes/{note_id}")
        await page.locator("#edit-note").click()
        await page.locator("#note-source").click()
        await page.locator("#note-source").press("End")
        await keystroke(page)  # warm-up
        for _ in range(runs):
            result.timings["keystroke to preview"].append(await keystroke(page))
            await asyncio.sleep(0.05)
        await browser.close()
    return result


def figures(r: Result) -> list[Figure]:
    return [Figure(f"/notes interactive p50 at {r.notes:,} notes", r.p("/notes load", .5), "ms", "time"),
            Figure(f"/tasks interactive p50 at {r.notes:,} notes", r.p("/tasks load", .5), "ms", "time"),
            Figure("keystroke to preview p50", r.p("keystroke to preview", .5), "ms", "time")]


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    rows = [f"| {name} | {len(samples)} | {machine.ms(r.p(name, .5))} | {machine.ms(r.p(name, .95))} | "
            f"{machine.ms(statistics.mean(samples))} |" for name, samples in r.timings.items()]

    def met(name: str, goal: float) -> str:
        value = r.p(name, .5)
        return (f"| {name}, p50 | {machine.ms(value)} ms | < {goal:.0f} ms | "
                f"{'yes' if machine.normalise(value, 'time') < goal else '**no**'} |")

    return "\n".join([
        "## Web UI pages (`python -m bench.ui_pages`)",
        "",
        (f"One user holding {r.notes:,} notes ({r.tasks:,} of them tasks), the app under uvicorn, headless "
         "Chromium signed in, after a warm-up visit (files revalidated by ETag, 304s; the service worker "
         "installed). *load*: a full page load, from navigation start to the view interactive (`#main` no "
         "longer `aria-busy`); *in-app*: the same view opened through the app's router from the home page; "
         "*keystroke to preview*: a character typed in the note editor until the live preview changes "
         "(debounce, `POST /api/render`, insertion). Cells are ms."),
        "",
        machine.describe(),
        "",
        "| Measure | Samples | p50 | p95 | mean |",
        "|---|---:|---:|---:|---:|",
        *rows,
        "",
        memory.describe(),
        "",
        "| Target (judged at the reference speed) | Measured | Goal | Met |",
        "|---|---|---|---|",
        met("/notes load", 500),
        met("/tasks load", 500),
        met("keystroke to preview", 100),
    ])


def _measure(o: Options) -> Measured[Result]:
    if not Path(CHROMIUM).is_file():
        raise Unavailable(f"it needs Chromium at {CHROMIUM}: run ./scripts/install-test-tools")
    return on_one_fable(lambda fable: run(fable, o.notes, o.runs))


BENCH = Bench("ui_pages", __doc__, Options, _measure, render, figures, quick=Options(notes=2000, runs=3))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
