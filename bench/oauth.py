"""OAuth benchmark: what a connection costs Fable, and what a request with its token costs.

    python -m bench.oauth [--flows 200] [--requests 500] [--no-write]

One fresh embedded PostgreSQL in a temporary directory; the web app in-process over
``httpx.ASGITransport`` (no sockets: Fable's cost, not the network's), with ``FABLE_BASE_URL``
set. Timed, sequentially:

- a **connection**: register a client, the signed-in person's consent POST (which issues the
  code), the code exchanged for tokens (PKCE S256), as a hosted client does once;
- a **refresh**: a refresh token exchanged for a new pair (rotation: the old one marked used);
- an **authenticated request** (``GET /api/notes?limit=1``) with an OAuth access token and with an
  API key, each remembered (the per-process cache of a credential, two seconds) and not (the
  cache emptied before each request: the database lookup, and for a token its resource check),
  the four kinds alternating so that the machine's changing load weighs on each alike.

Targets: a request with a token costs at most 10% more than one with a key (remembered), and a
refresh takes < 20 ms. Results go to the "oauth" section of docs/benchmarks.md.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.responses import Response

from bench.core import _make_user
from bench.harness.bench import Bench
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.report import Figure
from bench.harness.session import on_one_fable
from fable_core.identity.accounts import create_api_key
from fable_core.identity.login_sessions import start_session
from fable_core.runtime import Fable
from fable_web.app import create_app
from fable_web.sessions import COOKIE, SessionCodec

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    flows: int = 200
    requests: int = 500


BASE = "http://localhost"
REDIRECT = "http://127.0.0.1:8765/callback"


@dataclass
class Result:
    ms: dict[str, float] = field(default_factory=dict)  # median milliseconds per operation
    counts: dict[str, int] = field(default_factory=dict)


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    return verifier, base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


async def _timed(n: int, step: Callable[[], Awaitable[None]]) -> float:
    samples = []
    for _ in range(n):
        begun = time.perf_counter()
        await step()
        samples.append((time.perf_counter() - begun) * 1000)
    return statistics.median(samples)


async def _cookie(fable: Fable, user_id: int) -> str:
    async with fable.db.transaction() as session:
        started = await start_session(session, user_id)
    signed = Response()
    SessionCodec(fable.settings.secret_key(), secure=False).attach(signed, started.token)
    return signed.headers["set-cookie"].split(";", 1)[0].split("=", 1)[1]


async def _connect(http: httpx.AsyncClient, browser: httpx.AsyncClient) -> dict[str, Any]:
    client = (await http.post("/oauth/register", json={"client_name": "bench", "redirect_uris": [REDIRECT]})).json()
    verifier, challenge = _pkce()
    decided = await browser.post("/api/oauth/authorization", json={
        "client_id": client["client_id"], "redirect_uri": REDIRECT, "response_type": "code", "state": "s",
        "code_challenge": challenge, "code_challenge_method": "S256", "scope": "read write", "approve": True})
    code = httpx.URL(decided.json()["redirect"]).params["code"]
    issued = await http.post("/oauth/token", data={"grant_type": "authorization_code", "code": code,
                                                   "redirect_uri": REDIRECT, "client_id": client["client_id"],
                                                   "code_verifier": verifier})
    assert issued.status_code == 200, issued.text
    tokens: dict[str, Any] = issued.json()
    return {"client_id": client["client_id"]} | tokens


async def run(fable: Fable, flows: int, requests: int) -> Result:
    fable = Fable(fable.settings.model_copy(update={"fable_base_url": BASE}), fable.db)
    me = await _make_user(fable)
    async with fable.db.transaction() as session:
        _, key = await create_api_key(session, me.user_id, "bench", "write")
    app = create_app(fable)
    transport = httpx.ASGITransport(app=app, client=("203.0.113.9", 4711))
    result = Result(counts={"flows": flows, "requests": requests})
    async with (httpx.AsyncClient(transport=transport, base_url=BASE) as http,
                httpx.AsyncClient(transport=transport, base_url=BASE, headers={"origin": BASE},
                                  cookies={COOKIE: await _cookie(fable, me.user_id)}) as browser):
        from fable_core.infra import rate_limits

        rate_limits.LIMITS["oauth_register"] = rate_limits.Limit(10**9, 1)  # the bench is one address
        connection: dict[str, Any] = {}

        async def connect() -> None:
            connection.update(await _connect(http, browser))

        result.ms["connection"] = await _timed(flows, connect)

        async def refresh() -> None:
            r = await http.post("/oauth/token", data={"grant_type": "refresh_token",
                                                      "client_id": connection["client_id"],
                                                      "refresh_token": connection["refresh_token"]})
            connection.update(r.json())

        result.ms["refresh"] = await _timed(flows, refresh)
        # token and key requests alternate, so that the machine's load drifts over both alike
        samples: dict[str, list[float]] = {}
        credentials = {"token": connection["access_token"], "key": key}
        async def timed(secret: str) -> float:
            begun = time.perf_counter()
            r = await http.get("/api/notes", params={"limit": 1}, headers={"authorization": f"Bearer {secret}"})
            assert r.status_code == 200, r.text
            return (time.perf_counter() - begun) * 1000

        for _ in range(requests + 20):  # the first 20 rounds warm up
            for name, secret in credentials.items():
                fable.keys.forget()
                samples.setdefault(f"{name} looked up", []).append(await timed(secret))
            for secret in credentials.values():
                await timed(secret)  # both remembered now
            for name, secret in credentials.items():
                samples.setdefault(f"{name} remembered", []).append(await timed(secret))
        samples = {name: values[20:] for name, values in samples.items()}
        result.ms |= {name: statistics.median(values) for name, values in samples.items()}
    return result


def figures(r: Result) -> list[Figure]:
    return [Figure("OAuth connection (register, consent, token)", r.ms["connection"], "ms", "time"),
            Figure("refresh", r.ms["refresh"], "ms", "time"),
            Figure("request with a token (remembered)", r.ms["token remembered"], "ms", "time")]


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    def cell(name: str) -> str:
        return f"{r.ms[name]:.2f} ({machine.normalise(r.ms[name], 'time'):.2f})"

    overhead = r.ms["token remembered"] / r.ms["key remembered"] - 1
    refresh = machine.normalise(r.ms["refresh"], "time")
    return "\n".join([
        "## OAuth (`python -m bench.oauth`)",
        "",
        (f"The web app in-process (`httpx.ASGITransport`), one user. A connection is a client's registration, "
         f"the consent POST that issues the code and the code's exchange for tokens ({r.counts['flows']} in a row); "
         f"a refresh rotates the pair ({r.counts['flows']} in a row); a request is `GET /api/notes?limit=1` "
         f"({r.counts['requests']} each), its credential remembered by the process (two seconds) or looked up "
         f"(the memory emptied before each). Medians in milliseconds; in parentheses at the reference speed."),
        "",
        machine.describe(),
        "",
        "| Operation | Median ms |",
        "|---|---:|",
        f"| connection: register + consent + token | {cell('connection')} |",
        f"| refresh (rotation) | {cell('refresh')} |",
        f"| request, OAuth token remembered | {cell('token remembered')} |",
        f"| request, API key remembered | {cell('key remembered')} |",
        f"| request, OAuth token looked up | {cell('token looked up')} |",
        f"| request, API key looked up | {cell('key looked up')} |",
        "",
        memory.describe(),
        "",
        "| Target (judged at the reference speed) | Measured | Goal | Met |",
        "|---|---|---|---|",
        f"| token vs key, remembered | {overhead:+.0%} | <= +10% | {'yes' if overhead <= 0.10 else '**no**'} |",
        f"| refresh | {refresh:.1f} ms | < 20 ms | {'yes' if refresh < 20 else '**no**'} |",
    ])


BENCH = Bench("oauth", __doc__, Options, lambda o: on_one_fable(lambda fable: run(fable, o.flows, o.requests)), render,
              figures, quick=Options(flows=10, requests=20))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
