"""Feed refresh benchmark: what refreshing 100 feeds costs when none has changed.

    python -m bench.feeds [--feeds 100] [--items 20] [--runs 10] [--no-write]

One fresh embedded PostgreSQL and the tests' fake web site (``tests/support/web_site.py``:
uvicorn on 127.0.0.1 in a thread of its own, real HTTP) serving ``--feeds`` RSS feeds of
``--items`` items each, every one with an ETag. One user subscribes to them all (each feed
fetched, parsed and stored once), then ``--runs`` refreshes of every feed are timed, through
the dispatcher (``refresh_feeds``): each feed's conditional GET through the SSRF guard, answered
``304 Not Modified`` (nothing parsed or stored), and its status recorded, ``FABLE_FEED_CONCURRENCY``
(8) at a time.

Target (issue 15): a refresh of 100 feeds with no changes < 2 s (p50, at the reference speed).
Results go to the "feeds" section of docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.harness.bench import Bench, Measured
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.report import Figure
from bench.harness.session import on_fable, session
from bench.harness.stats import Latency, measure
from fable_core.config import load_settings
from fable_core.identity.accounts import create_user
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from tests.support.servers import serve_in_thread
from tests.support.web_site import FakeSite, web_site_app

__all__ = ["BENCH", "Options", "Result", "figures", "render", "run"]


@dataclass(frozen=True)
class Options:
    feeds: int = 100
    items: int = 20
    runs: int = option(10, "refreshes with nothing changed, timed")


TARGET_MS = 2000.0


@dataclass
class Result:
    feeds: int
    items: int
    subscribe_s: float
    quiet: Latency


def _feed(n: int, items: int) -> str:
    entries = "".join(
        f"<item><title>Story {n}.{i}</title><link>https://news.example/{n}/{i}</link><guid>{n}-{i}</guid>"
        f"<pubDate>Mon, 30 Nov 2026 {i % 24:02d}:00:00 GMT</pubDate>"
        f"<description>&lt;p&gt;Story {i} of feed {n}: {'words ' * 60}&lt;/p&gt;</description></item>"
        for i in range(items))
    return (f"<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Feed {n}</title>"
            f"<link>https://news.example/{n}</link>{entries}</channel></rss>")


async def run(fable: Fable, site: FakeSite, site_url: str, feeds: int = 100, items: int = 20,
              runs: int = 10) -> Result:
    async with fable.db.transaction() as session:
        user = await create_user(session, "feeds-bench", None)
    caller = Caller(user_id=user.id, username=user.username)
    for n in range(feeds):
        site.put(f"/feed/{n}.xml", _feed(n, items), "application/rss+xml", etag=f'"{n}-v1"')
    started = time.perf_counter()
    for n in range(feeds):
        await fable.call("subscribe_feed", {"url": f"{site_url}/feed/{n}.xml", "category": f"c{n % 5}"}, caller)
    subscribed = time.perf_counter() - started

    async def quiet(_: int) -> None:
        result = await fable.call("refresh_feeds", {}, caller)
        assert len(result["feeds"]) == feeds and result["new_items"] == 0, result
        assert all(f["status"] == "unchanged" for f in result["feeds"]), result

    latency = await measure(f"refresh_feeds, {feeds} feeds, all 304", runs, quiet, warmup=min(2, runs))
    assert site.hits("/feed/0.xml")[-1].get("if-none-match") == '"0-v1"'
    return Result(feeds, items, subscribed, latency)


def figures(r: Result) -> list[Figure]:
    return [Figure(f"refresh of {r.feeds} unchanged feeds p50", r.quiet.p50_ms, "ms", "time"),
            Figure(f"refresh of {r.feeds} unchanged feeds p99", r.quiet.p99_ms, "ms", "time")]


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    met = machine.normalise(r.quiet.p50_ms, "time") < TARGET_MS
    return "\n".join([
        "## Feeds (`python -m bench.feeds`)",
        "",
        (f"One user subscribed to {r.feeds} RSS feeds of {r.items} items each, served with an ETag by the tests' "
         "fake web site (uvicorn on 127.0.0.1 in a thread of this process: real HTTP, sharing its CPU); "
         f"subscribing to them all (each fetched, parsed and stored once) took {r.subscribe_s:.1f} s. Then "
         "refreshes of every feed with nothing changed, through the dispatcher (`refresh_feeds`): per feed a "
         "conditional GET through the SSRF guard answered 304 (nothing parsed) and its status written, "
         "8 feeds at a time. Figures in ms."),
        "",
        machine.describe(),
        "",
        "| Call | Samples | p50 | p99 | mean |",
        "|---|---:|---:|---:|---:|",
        r.quiet.row(machine.ms),
        "",
        memory.describe(),
        "",
        "| Target (judged at the reference speed) | Measured | Goal | Met |",
        "|---|---|---|---|",
        f"| a refresh of {r.feeds} feeds with no changes, p50 | {machine.ms(r.quiet.p50_ms)} ms | "
        f"< {TARGET_MS:.0f} ms | {'yes' if met else '**no**'} |",
    ])


def _measure(o: Options) -> Measured[Result]:
    site = FakeSite()
    with tempfile.TemporaryDirectory(prefix="fable-bench-") as tmp, session(Path(tmp)) as bench, \
            serve_in_thread(web_site_app(site)) as site_url:
        settings = load_settings({}, database_url=bench.database_url, fable_data_dir=Path(tmp), llm_provider="none",
                                 fable_fetch_allow_hosts=[site_url.removeprefix("http://")])
        result = asyncio.run(on_fable(settings, lambda fable: run(fable, site, site_url, o.feeds, o.items, o.runs)))
    return bench.measured(result)


BENCH = Bench("feeds", __doc__, Options, _measure, render, figures, quick=Options(feeds=10, runs=3))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
