"""Logs benchmark: what request logging costs a request, and the log viewer and retention at size.

    python -m bench.logs [--rows 200000] [--runs 400] [--no-write]

One fresh embedded PostgreSQL. Timed, in process (``httpx.ASGITransport`` over the whole app, so
every middleware runs): ``GET /api/notes/{id}`` with an API key, on two apps over the same Fable,
one with ``FABLE_LOG_REQUESTS`` on and one off, taking turns (the machine drifts). Then
``--rows`` log rows spread over 60 days and four categories are loaded, and ``list_logs`` is
timed (newest page; one category; a user and text filter; page 2), and one ``prune`` deletes what
is past the default retention (request rows older than 14 days, error 30, usage 90) in batches.
Target: request logging adds < 0.2 ms to a request's p50. Results go to the "logs" section of
docs/benchmarks.md.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy import text

from bench.core import _make_user
from bench.harness.bench import Bench
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.report import Figure
from bench.harness.session import on_one_fable
from fable_core.admin.logs.retention import prune
from fable_core.identity.accounts import create_api_key
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    rows: int = 200_000
    runs: int = option(400, "requests of each kind")



@dataclass
class Result:
    rows: int
    pruned: dict[str, int] = field(default_factory=dict)
    prune_seconds: float = 0.0
    calls: dict[str, list[float]] = field(default_factory=dict)  # call -> seconds

    def p(self, name: str, q: float) -> float:
        ms = sorted(s * 1000 for s in self.calls[name])
        return ms[min(len(ms) - 1, round(q * (len(ms) - 1)))]


async def _requests(fable: Fable, me: Caller, runs: int, calls: dict[str, list[float]]) -> None:
    note = await fable.call("create_note", {"title": "Logged"}, me)
    async with fable.db.transaction() as s:
        _, key = await create_api_key(s, me.user_id, "bench")
    apps = {"GET a note, request log on": create_app(fable),
            "GET a note, request log off": _without_request_log(fable)}
    clients = {name: httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost",
                                       headers={"authorization": f"Bearer {key}"}) for name, app in apps.items()}
    try:
        for name in apps:
            calls[name] = []
            for _ in range(20):
                assert (await clients[name].get(f"/api/notes/{note['id']}")).status_code == 200
        for _ in range(runs):
            for name, client in clients.items():
                begun = time.perf_counter()
                r = await client.get(f"/api/notes/{note['id']}")
                calls[name].append(time.perf_counter() - begun)
                assert r.status_code == 200
    finally:
        for client in clients.values():
            await client.aclose()
    await fable.dispatcher.usage.flush()


def _without_request_log(fable: Fable) -> Any:
    app = create_app(fable)
    for middleware in app.user_middleware:
        if "enabled" in middleware.kwargs:
            middleware.kwargs["enabled"] = False
    return app


async def _load(fable: Fable, me: Caller, rows: int) -> None:
    async with fable.db.engine.begin() as conn:
        await conn.execute(text("""
            INSERT INTO app_logs (created_at, category, user_id, username, action, method, endpoint, status_code,
                                  duration_ms, error_message, details)
            SELECT now() - (g::float / :n) * interval '60 days',
                   (ARRAY['request', 'request', 'usage', 'audit', 'error'])[g % 5 + 1],
                   :me, :name, (ARRAY['/api/notes', 'list_notes', 'share.create', 'search_notes'])[g % 4 + 1],
                   'GET', '/api/notes', 200, 1.5, CASE WHEN g % 5 = 4 THEN 'kaput ' || g END,
                   CASE WHEN g % 5 = 3 THEN jsonb_build_object('with_user', 'user' || (g % 100)) END
            FROM generate_series(1, :n) g"""), {"me": me.user_id, "name": me.username, "n": rows})
        await conn.execute(text("ANALYZE app_logs"))


async def run(fable: Fable, rows: int, runs: int) -> Result:
    me = await _make_user(fable)
    async with fable.db.transaction() as s:
        await s.execute(text("UPDATE users SET role = 'admin' WHERE id = :id"), {"id": me.user_id})
    admin = Caller(user_id=me.user_id, username=me.username, role="admin", surface="internal")
    result = Result(rows=rows)
    await _requests(fable, admin, runs, result.calls)
    await _load(fable, admin, rows)
    first = await fable.call("list_logs", {}, admin)
    views: dict[str, dict[str, Any]] = {
        "list_logs, newest 50": {},
        "list_logs, category error": {"category": "error"},
        "list_logs, user + text": {"user": me.username, "query": "user7"},
        "list_logs, page 2": {"cursor": first["next_cursor"]},
    }
    for name in views:
        result.calls[name] = []
    for _ in range(max(runs // 10, 5)):
        for name, args in views.items():
            begun = time.perf_counter()
            await fable.call("list_logs", args, admin)
            result.calls[name].append(time.perf_counter() - begun)
    begun = time.perf_counter()
    result.pruned = await prune(fable.db, fable.settings)
    result.prune_seconds = time.perf_counter() - begun
    return result


_ON, _OFF = "GET a note, request log on", "GET a note, request log off"


def figures(r: Result) -> list[Figure]:
    return [Figure("request log cost at p50", r.p(_ON, .5) - r.p(_OFF, .5), "ms", "time"),
            Figure(f"list_logs p50 at {r.rows:,} rows", r.p("list_logs, newest 50", .5), "ms", "time")]


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    rows = [f"| {name} | {len(samples)} | {machine.ms(r.p(name, .5))} | {machine.ms(r.p(name, .95))} |"
            for name, samples in r.calls.items()]
    cost = r.p(_ON, .5) - r.p(_OFF, .5)
    met = machine.normalise(cost, "time") < 0.2
    deleted = sum(r.pruned.values())
    return "\n".join([
        "## Logs (`python -m bench.logs`)",
        "",
        ("`GET /api/notes/{id}` with an API key through the whole app in process, request logging on and off "
         f"(taking turns); then {r.rows:,} log rows over 60 days (requests, usage, audit, errors) and `list_logs` "
         f"as an admin; then one `prune` at the default retention deleted {deleted:,} rows "
         f"({', '.join(f'{k} {v:,}' for k, v in r.pruned.items())}) in {r.prune_seconds:.2f} s. Cells are ms."),
        "",
        machine.describe(),
        "",
        "| Call | Samples | p50 | p95 |",
        "|---|---:|---:|---:|",
        *rows,
        "",
        memory.describe(),
        "",
        "| Target (judged at the reference speed) | Measured | Goal | Met |",
        "|---|---|---|---|",
        f"| request logging's cost at p50 | {machine.ms(cost)} ms | < 0.2 ms | {'yes' if met else '**no**'} |",
    ])


BENCH = Bench("logs", __doc__, Options, lambda o: on_one_fable(lambda fable: run(fable, o.rows, o.runs)), render,
              figures, quick=Options(rows=5000, runs=40))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
