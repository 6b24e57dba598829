"""Research benchmark: how much of a research run's wall time Fable itself spends working.

    python -m bench.research [--runs 3] [--pages 15] [--words-per-second 30]

A fresh embedded PostgreSQL, and in a process of its own (so its CPU is never charged to
Fable, and it never waits for Fable's GIL) the outside world, each over real HTTP on 127.0.0.1:
the fake SearXNG (``tests/support/searxng.py``, each search answering in 0.8 s with 20 results,
some found by several queries), the fake web site (``tests/support/web_site.py``, pages of
~60 kB of HTML with menus, scripts and asides around the article, each answering in 0.2 to 1 s)
and the fake Ollama (``tests/support/fake_llm.py``), which writes like a small local model:
``--words-per-second`` words a second, streamed word by word, ~40 words of queries, an outline
of 4 sections, 150 words per section and 100 words of summary.

Each run is ``research`` through the dispatcher, one after another, from the question to the
notes written (15 pages fetched, 4 section notes and an index note). Measured per run: the wall
time, the CPU time of the thread running the event loop (``time.thread_time()``: everything
Fable does for the run — dispatcher, pipeline, HTML extraction, HTTP clients, SQL — runs on it),
and the CPU time of the whole Fable process (``time.process_time()``: also the bench's own
memory sampler thread and any executor thread; an upper bound). PostgreSQL's CPU (its
processes' ``cpu_times``) is shown beside, not counted as Fable's code. Target: Fable's share
(loop-thread CPU / wall time) < 5 %. Results go to the "research" section of docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench.core import _make_user
from bench.harness.bench import Bench, Measured
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.postgres import postgres_pids
from bench.harness.report import Figure
from bench.harness.serving import free_port
from bench.harness.session import on_fable, session
from fable_core.config import load_settings
from fable_core.runtime import Fable
from tests.support.fake_llm import FakeLLM, Reply, ollama_app
from tests.support.searxng import FakeSearxng, result, searxng_app
from tests.support.web_site import FakeSite, web_site_app

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    runs: int = 3
    pages: int = option(15, "pages the fake site serves, twice over")
    words_per_second: float = option(30.0, "how fast the fake model writes")


SEARCH_SECONDS = 0.8
SECTIONS = ["Background", "How it works", "Evidence", "Open questions"]
_WORDS = ["wild", "yeast", "lactic", "bacteria", "ferment", "the", "flour", "and", "water", "while", "carbon",
          "dioxide", "lifts", "the", "dough", "and", "acids", "give", "flavour", "over", "hours", "at", "room",
          "temperature"]


def _page(i: int) -> str:
    """~60 kB of HTML: a site's furniture around an article of ~1,500 words."""
    menu = "".join(f"<li><a href='/m{k}'>Menu item {k}</a></li>" for k in range(120))
    script = "<script>" + "var x = {a: 1, b: [1, 2, 3]};" * 300 + "</script>"
    paragraphs = "".join(f"<p>{' '.join(_WORDS[(i + k) % len(_WORDS):] + _WORDS)} [{k}]</p>" for k in range(60))
    return (f"<html><head><title>Page {i}</title>{script}<style>{'p{margin:0}' * 200}</style></head><body>"
            f"<header><nav><ul>{menu}</ul></nav></header><main><article><h1>Sourdough {i}</h1>{paragraphs}"
            f"<aside>{'Related link ' * 100}</aside></article></main><footer>{'Footer text ' * 100}</footer>"
            "</body></html>")


class WritingModel(FakeLLM):
    """The fake Ollama answering each step of a research run as a small local model would."""

    words_per_second: float = 30.0

    def reply(self, body: dict[str, Any]) -> Reply:
        self.requests.append(("chat", body))
        system = body["messages"][0]["content"]
        if "web search queries" in system:
            text = json.dumps({"queries": [f"sourdough question {k} yeast bacteria rise" for k in range(5)]})
        elif "outline" in system:
            text = json.dumps({"sections": [{"title": t, "focus": f"what the sources say about {t.lower()}"}
                                            for t in SECTIONS]})
        else:
            words = 100 if "executive summary" in system else 150
            text = " ".join(_WORDS[k % len(_WORDS)] + (" [1]." if k % 12 == 11 else "") for k in range(words))
        pieces = len(re.findall(r"\S+\s*", text)) or 1
        return Reply(text, delay=len(text.split()) / self.words_per_second / pieces)


def _serve_world(ports: dict[str, int], pages: int, words_per_second: float) -> None:
    """The fake SearXNG, web site and model, in this (child) process, until terminated."""
    import uvicorn

    site = FakeSite()
    for i in range(pages * 2):
        site.page(f"/p{i}", _page(i), delay=0.2 + (i % 5) * 0.2)
    searxng = FakeSearxng(delay=SEARCH_SECONDS)
    base = f"http://127.0.0.1:{ports['site']}"
    searxng.default = [result(f"{base}/p{i}", f"Page {i}", "about sourdough") for i in range(20)]
    for k in range(5):  # each query ranks the pages from another start: some are found twice
        query = f"sourdough question {k} yeast bacteria rise"
        searxng.answer(query, [result(f"{base}/p{(i + 3 * k) % (pages * 2)}", f"Page {i}", "") for i in range(20)])
    model = WritingModel()
    model.words_per_second = words_per_second
    apps = {"searxng": searxng_app(searxng), "site": web_site_app(site), "llm": ollama_app(model)}

    async def serve_all() -> None:
        servers = [uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=ports[name], log_level="warning"))
                   for name, app in apps.items()]
        await asyncio.gather(*(s.serve() for s in servers))

    asyncio.run(serve_all())


@contextmanager
def outside_world(pages: int, words_per_second: float) -> Iterator[dict[str, str]]:
    ports = {name: free_port() for name in ("searxng", "site", "llm")}
    process = multiprocessing.get_context("spawn").Process(
        target=_serve_world, args=(ports, pages, words_per_second), daemon=True)
    process.start()
    urls = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{urls['llm']}/api/version", timeout=1).raise_for_status()
                httpx.get(f"{urls['searxng']}/search", params={"q": "x", "format": "json"}, timeout=3)
                break
            except httpx.HTTPError:
                if not process.is_alive() or time.monotonic() > deadline:
                    raise RuntimeError("the fake outside world did not start") from None
                time.sleep(0.05)
        yield urls
    finally:
        process.terminate()
        process.join(10)


@dataclass
class Sample:
    wall: float
    loop_cpu: float
    process_cpu: float
    postgres_cpu: float
    sources: int
    notes: int


@dataclass
class Result:
    pages: int
    words_per_second: float
    samples: list[Sample] = field(default_factory=list)

    def share(self, what: str) -> float:
        used: float = sum(getattr(s, what) for s in self.samples)
        return used / sum(s.wall for s in self.samples) * 100


def _postgres_cpu(pg_dir: Path | None) -> float:
    total = 0.0
    for pid in postgres_pids(pg_dir):
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


async def run(fable: Fable, runs: int, pg_dir: Path | None, result: Result) -> None:
    me = await _make_user(fable)
    for i in range(runs + 1):  # the first run warms up (connections, imports, statement caches)
        await asyncio.sleep(1.0)  # the embedding worker's backfill of the previous run's notes
        question = f"Why does sourdough rise, take {i}?"
        pg, process, loop, wall = _postgres_cpu(pg_dir), time.process_time(), time.thread_time(), time.perf_counter()
        run = await fable.dispatcher.call("research", {"question": question}, me)
        sample = Sample(time.perf_counter() - wall, time.thread_time() - loop, time.process_time() - process,
                        _postgres_cpu(pg_dir) - pg, len(run.get("sources", [])), len(run.get("notes", [])))
        assert run["status"] == "done", run
        if i > 0:
            result.samples.append(sample)


def figures(r: Result) -> list[Figure]:
    return [Figure("Fable's share of a research run's wall time (loop-thread CPU)", r.share("loop_cpu"), "%", "time")]


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    rows = [f"| {i} | {s.wall:.1f} | {s.sources} | {s.notes} | {s.loop_cpu * 1000:.0f} | {s.process_cpu * 1000:.0f} | "
            f"{s.postgres_cpu * 1000:.0f} | {s.loop_cpu / s.wall * 100:.2f} |" for i, s in enumerate(r.samples, 1)]
    share, whole = r.share("loop_cpu"), r.share("process_cpu")
    met = machine.normalise(share, "time") < 5
    return "\n".join([
        "## Research (`python -m bench.research`)",
        "",
        (f"`research` through the dispatcher, one run after another, against the fake SearXNG (0.8 s a search), "
         f"the fake web site (~60 kB pages answering in 0.2–1 s) and the fake Ollama writing "
         f"{r.words_per_second:g} words a second, all three in a process of their own over real HTTP. Each run: "
         f"5 queries, 5 staggered searches, {r.pages} pages fetched through the SSRF guard and extracted, an "
         f"outline of {len(SECTIONS)} sections written two at a time (the user's share of the model, "
         "`LLM_CONCURRENCY_PER_USER=2`), a summary, and the notes written in one transaction. Fable's CPU is the "
         "CPU time of the thread running the event loop (`time.thread_time()`: everything Fable does for a run "
         "runs there); the process's CPU adds the bench's memory sampler thread (an upper bound); PostgreSQL's "
         "is its processes' CPU, not counted as Fable's. One warm-up run is not shown."),
        "",
        machine.describe(),
        "",
        "| Run | Wall s | Pages read | Notes | Fable loop CPU ms | Fable process CPU ms | PostgreSQL CPU ms | "
        "Fable's share % |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
        memory.describe(),
        "",
        "| Target (judged at the reference speed) | Measured | Goal | Met |",
        "|---|---|---|---|",
        f"| Fable's share of a research run's wall time | {share:.2f} % ({machine.normalise(share, 'time'):.2f} %) "
        f"| < 5 % | {'yes' if met else '**no**'} |",
        f"| the same with the whole process's CPU (an upper bound) | {whole:.2f} % "
        f"({machine.normalise(whole, 'time'):.2f} %) | < 5 % | "
        f"{'yes' if machine.normalise(whole, 'time') < 5 else '**no**'} |",
    ])


def _measure(o: Options) -> Measured[Result]:
    result = Result(o.pages, o.words_per_second)
    with tempfile.TemporaryDirectory(prefix="fable-bench-") as tmp, session(Path(tmp)) as bench, \
            outside_world(o.pages, o.words_per_second) as urls:
        settings = load_settings({}, database_url=bench.database_url, fable_data_dir=Path(tmp),
                                 llm_provider="ollama", ollama_url=urls["llm"],
                                 embed_model="fake-embed", searxng_url=urls["searxng"],
                                 fable_fetch_allow_hosts=[urls["site"].removeprefix("http://")],
                                 fable_secret_key="bench" * 8)
        asyncio.run(on_fable(settings, lambda fable: run(fable, o.runs, bench.pg_dir, result)))
    return bench.measured(result)


BENCH = Bench("research", __doc__, Options, _measure, render, figures, quick=Options(runs=1, words_per_second=300))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
