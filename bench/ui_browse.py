"""Browsing benchmark: the web UI in a real Chromium, and the browse tools, at 10,000 notes.

    python -m bench.ui_browse [--notes 10000] [--runs 20] [--no-write]

One fresh embedded PostgreSQL in a temporary directory, the app under uvicorn in this process
(its event loop also drives Playwright; Chromium is a process of its own), and one user whose
first 1,000 notes are loaded by ``import_notes`` (``bench.harness.corpus``: tags, wikilinks, a fifth of
them tasks) and the rest SQL copies of them (titles numbered), up to ``--notes``.

Timed, after a warm-up (the browser's cache, the server's statements):
- the Notes page, interactive: from ``goto('/notes')`` (a whole page load, modules from the
  browser's cache) to its first page of notes and its count shown; and the same reached by an
  in-app navigation (the router, no page load);
- the quick switcher: in the page, from the input event of a typed query to its results shown
  (``suggest_titles`` over HTTP and the list drawn), for prefixes, whole titles and misspellings;
- ``suggest_titles`` (the ``[[`` completion and the switcher), ``tag_tree`` and ``note_graph``
  (2,000 and 5,000 notes) through the dispatcher, in process;
- the Graph page at 5,000 notes: from the navigation's start to its first frame drawn (a
  ``performance`` mark), and from ``goto`` until the force layout has settled.
Targets (issue 18): notes page < 500 ms warm, switcher results < 100 ms after typing,
``[[`` completion < 150 ms. Results go to the "ui_browse" section of docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import text

from bench.harness.bench import Bench, Measured, Unavailable
from bench.harness.corpus import Corpus
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.report import Figure
from bench.harness.session import on_one_fable
from bench.imports import import_corpus
from fable_core.identity.accounts import create_user
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    notes: int = 10_000
    runs: int = option(20, "samples of each page measure")


IMPORTED = 1000
PASSWORD = "bench-password-1"  # a throwaway account in a throwaway database
CHROMIUM = "/usr/bin/chromium"
# in the page: type a query into the open switcher, resolve with the ms until its results show
_TYPE = """async (query) => {
  const dialog = document.querySelector("dialog.switcher");
  const input = dialog.querySelector("input");
  const before = dialog.dataset.ready;
  const shown = new Promise((resolve) => {
    const watch = new MutationObserver(() => {
      if (dialog.dataset.ready !== before) { watch.disconnect(); resolve(performance.now()); }
    });
    watch.observe(dialog, { attributes: true, attributeFilter: ["data-ready"] });
  });
  input.value = query;
  const started = performance.now();
  input.dispatchEvent(new Event("input"));
  return (await shown) - started;
}"""


@dataclass
class Result:
    notes: int
    tags: int
    load_seconds: float
    ms: dict[str, list[float]] = field(default_factory=dict)

    def p(self, name: str, q: float) -> float:
        ms = sorted(self.ms[name])
        return ms[min(len(ms) - 1, round(q * (len(ms) - 1)))]


async def _sql(fable: Fable, sql: str, **params: Any) -> Any:
    async with fable.db.engine.begin() as conn:
        return await conn.execute(text(sql), params)


async def _world(fable: Fable, notes: int) -> Caller:
    async with fable.db.transaction() as session:
        user = await create_user(session, "browser", PASSWORD)
    me = Caller(user_id=user.id, username=user.username, surface="internal")
    await import_corpus(fable, me, Corpus(seed=7), min(IMPORTED, notes))
    if notes > IMPORTED:
        await _sql(fable, """
            INSERT INTO notes (user_id, title, title_key, body, tags, status, priority, due_date, version)
            SELECT n.user_id, left(n.title || ' ' || g, 300), left(n.title_key || ' ' || g, 300), n.body, n.tags,
                   n.status, n.priority, n.due_date, 1
            FROM notes n, generate_series(1, :copies) g WHERE n.user_id = :me ORDER BY g, n.id LIMIT :more""",
                   me=me.user_id, copies=notes // IMPORTED + 1, more=notes - IMPORTED)
    await _sql(fable, "ANALYZE")
    return me


def _queries(titles: list[str]) -> list[str]:
    """Prefixes of titles (3 to 6 letters), whole titles and titles with a letter dropped."""
    out = []
    for i, title in enumerate(titles):
        kind = i % 3
        if kind == 0:
            out.append(title[: 3 + i % 4])
        elif kind == 1:
            out.append(title)
        else:
            at = len(title) // 2
            out.append(title[:at] + title[at + 1:])
    return out


async def _timed(result: Result, name: str, runs: int, call: Callable[[], Awaitable[Any]]) -> None:
    for _ in range(3):
        await call()
    samples = result.ms.setdefault(name, [])
    for _ in range(runs):
        started = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - started) * 1000)


async def _serve(fable: Fable) -> tuple[str, Any, asyncio.Task[None]]:
    import uvicorn

    from fable_web.app import create_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(fable), log_level="warning", lifespan="on"))
    started = asyncio.Event()
    original = server.startup

    async def startup(sockets: Any = None) -> None:
        await original(sockets=sockets)
        started.set()

    server.startup = startup  # type: ignore[method-assign]
    task = asyncio.create_task(server.serve(sockets=[sock]))
    await started.wait()
    return f"http://127.0.0.1:{port}", server, task


async def _browser(result: Result, url: str, runs: int, queries: list[str]) -> None:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        context = await browser.new_context(base_url=url, viewport={"width": 1280, "height": 800})
        page = await context.new_page()
        login = await page.request.post(f"{url}/api/auth/login", data={"username": "browser", "password": PASSWORD},
                                        headers={"Origin": url})
        assert login.ok, await login.text()

        async def notes_page() -> None:
            await page.goto("/notes")
            await page.wait_for_selector("#notes-count:not(:empty)")
            await page.wait_for_selector("#notes-list li")

        async def notes_by_router() -> None:
            await page.evaluate("history.pushState(null, '', '/tags'); dispatchEvent(new PopStateEvent('popstate'))")
            await page.wait_for_selector(".tag-tree")
            started = await page.evaluate("performance.now()")
            await page.evaluate("history.pushState(null, '', '/notes'); dispatchEvent(new PopStateEvent('popstate'))")
            await page.wait_for_selector("#notes-count:not(:empty)")
            result.ms.setdefault("notes page, in-app navigation", []).append(
                await page.evaluate("performance.now()") - started)

        await _timed(result, "notes page, page load (warm)", runs, notes_page)
        for _ in range(runs):
            await notes_by_router()
        await page.goto("/notes")
        await page.wait_for_selector("#notes-count:not(:empty)")
        await page.keyboard.press("Control+k")
        await page.wait_for_selector("dialog.switcher[data-ready]")
        for query in queries[:3]:
            await page.evaluate(_TYPE, query)  # warm-up
        result.ms["quick switcher, typing to results"] = [await page.evaluate(_TYPE, q) for q in queries]
        await page.keyboard.press("Escape")

        async def graph_page() -> None:
            await page.goto("/graph?limit=5000")
            await page.wait_for_selector("#graph-canvas[data-settled]", timeout=120_000)
            drawn = await page.evaluate("performance.getEntriesByName('graph-drawn')[0].startTime")
            result.ms.setdefault("graph page, 5,000 notes: first drawn", []).append(drawn)

        await _timed(result, "graph page, 5,000 notes: layout settled", max(3, runs // 4), graph_page)
        result.ms["graph page, 5,000 notes: first drawn"] = result.ms["graph page, 5,000 notes: first drawn"][3:]
        await browser.close()


async def run(fable: Fable, notes: int, runs: int) -> Result:
    started = time.perf_counter()
    me = await _world(fable, notes)
    load = time.perf_counter() - started
    titles = list((await _sql(fable, "SELECT title FROM notes WHERE user_id = :me ORDER BY random() LIMIT :n",
                              me=me.user_id, n=max(30, runs * 3))).scalars())
    result = Result(notes=(await _sql(fable, "SELECT count(*) FROM notes")).scalar_one(),
                    tags=(await _sql(fable, "SELECT count(DISTINCT t) FROM notes, unnest(tags) t")).scalar_one(),
                    load_seconds=load)
    queries = _queries(titles)
    turn = iter(queries * 10)
    await _timed(result, "suggest_titles (dispatcher)", len(queries),
                 lambda: fable.call("suggest_titles", {"text": next(turn), "limit": 10}, me))
    await _timed(result, "tag_tree (dispatcher)", runs, lambda: fable.call("tag_tree", {}, me))
    await _timed(result, "note_graph 2,000 notes (dispatcher)", runs, lambda: fable.call("note_graph", {}, me))
    await _timed(result, "note_graph 5,000 notes (dispatcher)", max(3, runs // 2),
                 lambda: fable.call("note_graph", {"limit": 5000}, me))
    url, server, task = await _serve(fable)
    try:
        await _browser(result, url, runs, queries)
    finally:
        server.should_exit = True
        await task
    return result


_TARGETS = {"notes page, page load (warm)": 500, "quick switcher, typing to results": 100,
            "suggest_titles (dispatcher)": 150}


def figures(r: Result) -> list[Figure]:
    return [Figure(f"notes page p50 at {r.notes:,} notes", r.p("notes page, page load (warm)", .5), "ms", "time"),
            Figure(f"quick switcher p50 at {r.notes:,} notes", r.p("quick switcher, typing to results", .5), "ms",
                   "time"),
            Figure(f"suggest_titles p95 at {r.notes:,} notes", r.p("suggest_titles (dispatcher)", .95), "ms", "time")]


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    rows = [f"| {name} | {len(samples)} | {machine.ms(r.p(name, .5))} | {machine.ms(r.p(name, .95))} |"
            for name, samples in r.ms.items()]
    targets = [f"| {name} p95 at {r.notes:,} notes | {machine.ms(r.p(name, .95))} ms | < {goal} ms | "
               f"{'yes' if machine.normalise(r.p(name, .95), 'time') < goal else '**no**'} |"
               for name, goal in _TARGETS.items()]
    return "\n".join([
        "## Browsing UI (`python -m bench.ui_browse`)",
        "",
        (f"One user holding {r.notes:,} notes ({IMPORTED:,} loaded by `import_notes`, the rest SQL copies of "
         f"them; {r.tags:,} distinct tags). The app under uvicorn in the bench's process, Debian's Chromium "
         f"(headless) driven by Playwright: the Notes page from `goto` to its first page and count shown (a page "
         f"load, modules from the browser's cache) and by an in-app navigation; the quick switcher from the "
         f"input event of a typed query (prefixes, whole titles, a letter dropped) to its results drawn; the "
         f"Graph page at 5,000 notes to its first frame and until its layout settles. The browse tools "
         f"through the dispatcher in process (loading took {r.load_seconds:.0f} s). Cells are ms."),
        "",
        machine.describe(),
        "",
        "| Measure | Samples | p50 | p95 |",
        "|---|---:|---:|---:|",
        *rows,
        "",
        memory.describe(),
        "",
        "| Target (judged at the reference speed) | Measured | Goal | Met |",
        "|---|---|---|---|",
        *targets,
    ])


def _measure(o: Options) -> Measured[Result]:
    try:
        import playwright  # noqa: F401 - only asked whether it is installed
    except ImportError:
        raise Unavailable("it needs Playwright (make install-dev) and Chromium at /usr/bin/chromium") from None
    if not Path(CHROMIUM).exists():
        raise Unavailable(f"it needs Chromium at {CHROMIUM} (apt-get install chromium)")
    return on_one_fable(lambda fable: run(fable, o.notes, o.runs))


BENCH = Bench("ui_browse", __doc__, Options, _measure, render, figures, quick=Options(notes=2000, runs=3))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
