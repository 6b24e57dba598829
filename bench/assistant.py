"""Assistant benchmark: time to first token, many SSE followers, hybrid search at 100k notes.

    python -m bench.assistant [--notes 100000] [--dims 256] [--runs 200] [--followers 100]

Starts a fresh embedded PostgreSQL in a temporary directory and the scripted fake Ollama
(``tests/support/fake_llm.py``, real HTTP on 127.0.0.1, in a process of its own as a real model server
would be: its CPU is not charged to Fable and it never waits for Fable's GIL) and measures:

- Fable's added time to first token: from ``send`` (store the message, build the context with
  an embedding of the message and a vector search, recall the history, offer the registry's
  tools) to the first ``token`` event a follower receives, minus the same chat request made to
  the fake directly, up to its first token. Only that is timed: the rest of the answer, and the
  title and summary written after it, are awaited between samples. Each message is new (no
  embedding comes from the cache) and the two measurements alternate, so both see the same
  machine. Measured on an empty database, then again with ``--notes`` notes indexed;
- N concurrent SSE followers (real HTTP, uvicorn) of one generation: every follower must
  receive every event, in order;
- hybrid ``search_notes`` (through the dispatcher, embedding each query over HTTP) at
  ``--notes`` notes, each with a ``--dims``-dimensional embedding under an HNSW index, next to
  keyword-only search on the same data.

Results go to the "assistant" section of docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
from sqlalchemy import text

from bench.harness.bench import Bench, Measured
from bench.harness.corpus import Corpus
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.report import Figure
from bench.harness.session import session
from bench.harness.stats import Latency, measure, summarise
from fable_core.config import Settings, load_settings
from fable_core.knowledge.vectors import EMBEDDER
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

if TYPE_CHECKING:
    from fable_core.assistant.service import Assistant

from tests.support.fake_llm import FakeLLM, Reply, embed_text, ollama_app
from tests.support.servers import free_port

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    notes: int = 100_000
    dims: int = option(256, "embedding dimensions of the fake model")
    runs: int = 200
    followers: int = 100


EMBED_MODEL = "bench-embed"


@dataclass
class Results:
    notes: int = 0
    dims: int = 0
    load_seconds: float = 0.0
    index_seconds: float = 0.0
    uses_index: bool = False
    latencies: list[Latency] = field(default_factory=list)
    cpu_ms: dict[str, float] = field(default_factory=dict)  # p50 CPU of this process per sample
    followers: int = 0
    follower_events: int = 0
    followers_complete: int = 0
    follow_seconds: float = 0.0


async def _user(fable: Fable) -> Caller:
    from fable_core.identity.accounts import create_user

    async with fable.db.transaction() as s:
        user = await create_user(s, "bench", None)
    return Caller(user_id=user.id, username="bench", role=user.role)


# --- the fake model server, in a process of its own ----------------------------------------------


def _serve_fake(port: int, dims: int) -> None:
    """The fake Ollama, scripted over HTTP: ``POST /bench/replies {"text", "delay"}`` queues the
    next answer to a request with tools (with none queued, it echoes the last user message)."""
    import uvicorn
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    fake = FakeLLM(dims=dims)

    async def script(request: Request) -> JSONResponse:
        body = await request.json()
        fake.replies.append(Reply(body["text"], delay=body.get("delay", 0.0)))
        return JSONResponse({"queued": len(fake.replies)})

    app = ollama_app(fake)
    app.router.routes.append(Route("/bench/replies", script, methods=["POST"]))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


@contextmanager
def fake_server(dims: int) -> Iterator[str]:
    """Run :func:`_serve_fake` in a child process; yields its base URL."""
    port = free_port()
    process = multiprocessing.get_context("spawn").Process(target=_serve_fake, args=(port, dims), daemon=True)
    process.start()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/api/version", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if not process.is_alive() or time.monotonic() > deadline:
                    raise RuntimeError("the fake model server did not start") from None
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.join(10)


# --- time to first token -----------------------------------------------------------------------

Timed = Callable[[int], Awaitable[tuple[float, float]]]


async def _first_tokens(names: tuple[str, str], runs: int, fns: tuple[Timed, Timed], results: Results,
                        warmup: int = 20) -> list[Latency]:
    """Alternate the two measurements ``runs`` times (after ``warmup`` untimed rounds); each
    returns (wall seconds, CPU seconds) up to its first token."""
    counter = itertools.count()
    for _ in range(min(warmup, runs)):
        for fn in fns:
            await fn(next(counter))
    samples: list[list[tuple[float, float]]] = [[], []]
    for _ in range(runs):
        for k, fn in enumerate(fns):
            samples[k].append(await fn(next(counter)))
    for name, timed in zip(names, samples, strict=True):
        results.cpu_ms[name] = statistics.median(cpu for _, cpu in timed) * 1000
    return [summarise(name, [wall for wall, _ in timed]) for name, timed in zip(names, samples, strict=True)]


def _assistant(fable: Fable) -> Assistant:
    if fable.assistant is None:
        raise RuntimeError("the bench runs Fable with a model provider: its assistant is missing")
    return fable.assistant


async def ttft(fable: Fable, caller: Caller, runs: int, results: Results, *, label: str = "") -> list[Latency]:
    from fable_core.assistant.toolloop import llm_tools

    assistant = _assistant(fable)
    provider = assistant.provider
    tools = llm_tools(fable.registry, caller)
    conversation = (await fable.call("create_conversation", {}, caller))["id"]

    async def direct(i: int) -> tuple[float, float]:
        messages = [{"role": "system", "content": "You are Fable's assistant."},
                    {"role": "user", "content": f"question number {i}{label}"}]
        started, cpu = time.perf_counter(), time.process_time()
        stream = provider.chat_stream(messages, tools)
        async for chunk in stream:
            if chunk.text:
                break
        timed = time.perf_counter() - started, time.process_time() - cpu
        async for _ in stream:  # read to the end: the connection goes back to the pool
            pass
        return timed

    async def through_fable(i: int) -> tuple[float, float]:
        started, cpu = time.perf_counter(), time.process_time()
        await assistant.send(caller, conversation, f"question number {i}{label}")
        events = assistant.follow(caller, conversation)
        async for event in events:
            if event.event == "token":
                break
        timed = time.perf_counter() - started, time.process_time() - cpu
        await events.aclose()
        await assistant.wait(conversation)  # the rest of the answer, its title and summary
        return timed

    names = (f"first token, fake Ollama directly{label}", f"first token, through Fable{label}")
    return await _first_tokens(names, runs, (direct, through_fable), results)


# --- followers ----------------------------------------------------------------------------------


async def followers(fable: Fable, caller: Caller, fake_url: str, count: int, results: Results) -> None:
    from fable_core.identity.accounts import create_api_key
    from fable_web.app import create_app
    from tests.support.servers import serve
    from tests.support.sse import sse_events

    async with fable.db.transaction() as s:
        _, key = await create_api_key(s, caller.user_id, "bench")
    answer = " ".join(f"w{i}" for i in range(500))
    async with httpx.AsyncClient() as control:
        (await control.post(f"{fake_url}/bench/replies", json={"text": answer, "delay": 0.002})).raise_for_status()
    async with serve(create_app(fable)) as url:
        limits = httpx.Limits(max_connections=count + 10)
        async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits,
                                     headers={"Authorization": f"Bearer {key}"}) as http:
            conv = (await http.post("/api/chat/conversations", json={})).json()["id"]
            started = time.perf_counter()
            await http.post(f"/api/chat/conversations/{conv}/messages", json={"content": "go"})

            async def follow() -> tuple[str, list[int]]:
                async with http.stream("GET", f"/api/chat/conversations/{conv}/generation/stream") as r:
                    events = [e async for e in sse_events(r)]
                text_ = "".join(e["data"]["text"] for e in events if e["event"] == "token")
                return text_, [int(e["id"].split(":")[1]) for e in events if "id" in e]  # not heartbeats

            outcomes = await asyncio.gather(*(follow() for _ in range(count)))
            results.follow_seconds = time.perf_counter() - started
    results.followers = count
    results.follower_events = max(len(ids) for _, ids in outcomes)
    results.followers_complete = sum(
        1 for text_, ids in outcomes if text_ == answer and ids == list(range(1, len(ids) + 1)))


# --- hybrid search at scale -----------------------------------------------------------------------


async def load_embeddings(fable: Fable, dims: int, batch: int = 2000) -> None:
    from fable_core.assistant.embeddings import content_hash
    from fable_core.knowledge.vectors import note_text

    after = 0
    while True:
        async with fable.db.transaction() as s:
            rows = (await s.execute(text(
                "SELECT id, user_id, title, body FROM notes WHERE id > :a ORDER BY id LIMIT :n"),
                {"a": after, "n": batch})).all()
            if not rows:
                return
            params = []
            for note_id, user_id, title, body in rows:
                t = note_text(title, body)
                vector = embed_text(t, dims)
                params.append({"id": note_id, "u": user_id, "m": EMBED_MODEL, "d": dims,
                               "h": content_hash(EMBED_MODEL, t),
                               "e": "[" + ",".join(f"{v:.6f}" for v in vector) + "]"})
            await s.execute(text(
                "INSERT INTO note_embeddings (note_id, user_id, model, dims, content_hash, embedding) "
                "VALUES (:id, :u, :m, :d, :h, CAST(:e AS vector))"), params)
            after = rows[-1][0]


async def build_index(fable: Fable, dims: int) -> None:
    async with fable.db.engine.begin() as conn:
        await conn.execute(text("SET maintenance_work_mem = '512MB'"))
        await conn.execute(text(
            f"CREATE INDEX IF NOT EXISTS ix_note_embeddings_hnsw_{dims} ON note_embeddings "
            f"USING hnsw ((embedding::vector({dims})) vector_cosine_ops) WHERE dims = {dims}"))
        # Statistics for both tables, as autovacuum would gather them shortly after a bulk load:
        # measured right after it, a planner that believes ``notes`` is nearly empty joins every
        # note instead of walking the index.
        await conn.execute(text("ANALYZE notes"))
        await conn.execute(text("ANALYZE note_embeddings"))


async def uses_index(fable: Fable, caller: Caller, dims: int) -> bool:
    from sqlalchemy import select

    from fable_core.db.models import Note
    from fable_core.knowledge.vectors import nearest

    vector = embed_text("plan meeting review", dims)
    async with fable.db.transaction() as s:
        captured: list[str] = []
        await nearest(s, caller, vector, EMBED_MODEL, limit=50, where=[Note.project_id.is_(None)])
        from pgvector.sqlalchemy import Vector
        from sqlalchemy import cast

        from fable_core.db.models import NoteEmbedding

        distance = cast(NoteEmbedding.embedding, Vector(dims)).cosine_distance(cast(vector, Vector(dims)))
        stmt = (select(NoteEmbedding.note_id).join(Note, Note.id == NoteEmbedding.note_id)
                .where(NoteEmbedding.dims == dims, NoteEmbedding.model == EMBED_MODEL,
                       NoteEmbedding.user_id == caller.user_id).order_by(distance).limit(50))
        compiled = stmt.compile(compile_kwargs={"literal_binds": True})
        for (line,) in (await s.execute(text(f"EXPLAIN {compiled}"))).all():
            captured.append(line)
    return any(f"ix_note_embeddings_hnsw_{dims}" in line for line in captured)


async def search(fable: Fable, caller: Caller, runs: int) -> list[Latency]:
    corpus = Corpus(seed=11)
    queries = [corpus.query() for _ in range(runs * 2 + 50)]
    embedder = fable.embedder
    hybrid = await measure("search_notes, hybrid", runs,
                           lambda i: fable.call("search_notes", {"query": queries[i]}, caller))
    fable.install(EMBEDDER, None)
    try:
        keyword = await measure("search_notes, keyword only", runs,
                                lambda i: fable.call("search_notes", {"query": queries[runs + i]}, caller))
    finally:
        fable.install(EMBEDDER, embedder)
    return [hybrid, keyword]


# --- orchestration ------------------------------------------------------------------------------


async def run(settings: Settings, fake_url: str, args: Options) -> Results:
    from bench.rest import bulk_load

    r = Results(notes=args.notes, dims=args.dims)
    fable = await Fable.open(settings)
    try:
        worker = _assistant(fable).worker
        if worker is not None:
            await worker.stop()  # the bench loads embeddings itself
        caller = await _user(fable)
        r.latencies += await ttft(fable, caller, args.runs, r)
        await followers(fable, caller, fake_url, args.followers, r)
        started = time.perf_counter()
        await bulk_load(fable, caller.user_id, Corpus(seed=7), args.notes)
        await load_embeddings(fable, args.dims)
        r.load_seconds = time.perf_counter() - started
        started = time.perf_counter()
        await build_index(fable, args.dims)
        r.index_seconds = time.perf_counter() - started
        r.uses_index = await uses_index(fable, caller, args.dims)
        r.latencies += await ttft(fable, caller, args.runs, r, label=f", {args.notes:,} notes")
        r.latencies += await search(fable, caller, args.runs)
    finally:
        await fable.close()
    return r


def figures(r: Results) -> list[Figure]:
    """Added time to first token first (``bench.run --repeat`` picks its median run by it)."""
    by = {lat.name: lat.p50_ms for lat in r.latencies}
    direct, fable = "first token, fake Ollama directly", "first token, through Fable"
    at = f", {r.notes:,} notes"
    return [Figure("added time to first token, p50", by[fable] - by[direct], "ms", "time"),
            Figure(f"added time to first token{at}, p50", by[fable + at] - by[direct + at], "ms", "time"),
            Figure("hybrid search_notes p50", by["search_notes, hybrid"], "ms", "time"),
            Figure("keyword search_notes p50", by["search_notes, keyword only"], "ms", "time")]


def render(r: Results, machine: Machine, memory: PeakMemory) -> str:
    by = {lat.name: lat for lat in r.latencies}
    direct, fable = "first token, fake Ollama directly", "first token, through Fable"
    at = f", {r.notes:,} notes"
    added = by[fable].p50_ms - by[direct].p50_ms
    added_at = by[fable + at].p50_ms - by[direct + at].p50_ms
    cpu_added = r.cpu_ms[fable] - r.cpu_ms[direct]
    hybrid = by["search_notes, hybrid"].p50_ms
    rows = "\n".join(lat.row(machine.ms) for lat in r.latencies)
    return f"""## Assistant

`python -m bench.assistant` — fresh embedded PostgreSQL, the scripted fake Ollama over HTTP on
127.0.0.1 in its own process.

{machine.describe()}

| measurement | samples | p50 ms | p99 ms | mean ms |
|---|---|---|---|---|
{rows}

- **Added time to first token: {machine.ms(added)} ms p50** (target < 10 ms; {machine.ms(added_at)} ms with
  {r.notes:,} notes indexed), from sending the message to the first token a follower receives:
  storing both messages and reading the history (one statement), embedding the message (one
  HTTP round trip to the fake, meanwhile) and the vector search for context, the registry's
  tools as LLM schema, and a longer prompt than the direct request's. Fable's own CPU for it:
  {cpu_added:.2f} ms p50 ({r.cpu_ms[fable]:.2f} ms in this process per first token, against
  {r.cpu_ms[direct]:.2f} ms for the direct request). The title and summary are written after
  the answer and not timed.
- **{r.followers} concurrent SSE followers** of one {r.follower_events}-event generation over real
  HTTP: {r.followers_complete}/{r.followers} received every event in order, no gap, no repeat
  ({r.follow_seconds:.2f} s for the whole answer).
- **Hybrid search_notes at {r.notes:,} notes: {machine.ms(hybrid)} ms p50** (target < 30 ms), each note
  with a {r.dims}-dimension embedding (HNSW, cosine; the planner uses the index:
  {"yes" if r.uses_index else "NO"}), each query embedded over HTTP, fused with full-text by
  reciprocal rank. Loading notes and embeddings took {r.load_seconds:.0f} s, the index
  {r.index_seconds:.0f} s.
- {memory.describe()} Python: this process (Fable) and the fake model server's; PostgreSQL: the
  postmaster and its backends.
"""


def _measure(o: Options) -> Measured[Results]:
    with tempfile.TemporaryDirectory(prefix="fable-bench-") as tmp, session(Path(tmp)) as bench, \
            fake_server(o.dims) as url:
        settings = load_settings({}, database_url=bench.database_url, fable_data_dir=Path(tmp),
                                 llm_provider="ollama", ollama_url=url, embed_model=EMBED_MODEL,
                                 fable_secret_key="bench" * 8)
        result = asyncio.run(run(settings, url, o))
    return bench.measured(result)


BENCH = Bench("assistant", __doc__, Options, _measure, render, figures,
              quick=Options(notes=2000, runs=30, followers=20))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
