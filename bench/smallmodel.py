"""Tools a small model can afford: the prompt of a chat turn, and the time to its first token
with a real small model, when every tool is described (before issue 22) and when the turn
describes the tools picked for its message (now); then a conversation's later turns, whose
prompt starts with what the server read for the turn before (issue 40: a stable prefix).

    python -m bench.smallmodel [--runs 1] [--no-write]

The model is SmolLM2-135M-Instruct behind llama.cpp's server (``tests/support/llama.py``: one
thread, a context of 8,192 tokens), in ``prompt`` mode (the tool list in the system prompt: the
server's default chat format ignores ``tools``, so it is the one way its model reads them). A
proxy records each request and asks for one token, so the time measured is reading the prompt.
Prompt sizes are given two ways: bytes/4 of the JSON (what the issue budgets) and the model's
own token count (llama.cpp's ``/extras/tokenize/count``). Results go to the "small model"
section of docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.harness.bench import Bench, Measured
from bench.harness.machine import Machine
from bench.harness.options import option
from bench.harness.report import Figure
from bench.harness.session import session
from fable_core.config import Settings, load_settings
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from tests.support.llama import MODEL_ALIAS, find_model, proxy_app, running_llama
from tests.support.servers import serve

__all__ = ["BENCH", "Options"]

N_CTX = 8192
WIDE_CTX = 16_384  # every tool described takes more than 8,192 tokens since the registry grew
CONTEXTS = (2048, 4096, 8192)
MESSAGES = ("remind me to call the dentist tomorrow", "what did I write about the kitchen",
            "log 2 hours on the report", "how many hours did I work on project X")
TIMED = "log 2 hours on the report"
CONVERSATION = ("remind me to call the dentist tomorrow", "what did I write about the kitchen",
                "log 2 hours on the report")
SERVERS = (("llama_cpp.server", ()), ("llama_cpp.server --cache true", ("--cache", "true")))


async def server_memory() -> list[tuple[int, int, int, int]]:
    """The llama.cpp server's resident memory (MB) with each of CONTEXTS, once started and once
    it has read a prompt that fills its context: as llama-cpp-python starts by default, then with
    ``--logits_all false`` (as the tests' server runs)."""
    return [(n_ctx, *await _memory(n_ctx, ("--logits_all", "true")), (await _memory(n_ctx, ()))[1])
            for n_ctx in CONTEXTS]


async def _memory(n_ctx: int, extra: tuple[str, ...]) -> tuple[int, int]:
    import psutil

    async with running_llama(find_model(), n_ctx=n_ctx, extra=extra) as url, \
            httpx.AsyncClient(base_url=url, timeout=1200) as llama:
        port = url.rsplit(":", 1)[1]
        [server] = [p for p in psutil.process_iter(["cmdline"])
                    if "llama_cpp.server" in (p.info["cmdline"] or []) and port in (p.info["cmdline"] or [])]
        started = server.memory_info().rss // 2**20
        words = "note " * (n_ctx - 64)  # about a token a word
        prompt = words[:len(words) * (n_ctx - 64) // max(await _count(llama, words), 1)]
        response = await llama.post("/v1/completions", json={"prompt": prompt, "max_tokens": 1})
        response.raise_for_status()
        return started, server.memory_info().rss // 2**20


@dataclass
class Row:
    config: str
    tools: int = 0
    tool_bytes: int = 0
    prompt_bytes: int = 0
    prompt_tokens: int = 0
    ttft: list[float] = field(default_factory=list)


@dataclass
class Turn:
    """One turn of a conversation: its first request's prompt, the part of it the server had not
    read for the request before it, and the time to the first token a follower receives."""

    message: str
    prompt_tokens: int
    new_tokens: int
    ttft: float


@dataclass
class Talk:
    """A conversation on one server configuration, and the stable part of its prompts."""

    server: str = ""
    turns: list[Turn] = field(default_factory=list)
    stable_bytes: int = 0
    stable_tokens: int = 0


Sizes = list[tuple[str, int, int, int]]


def _one_token(body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "max_tokens": 1, "temperature": 0}


def _chatml(messages: list[dict[str, Any]]) -> str:
    """The prompt as SmolLM2's chat template renders it (ChatML)."""
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages) + "<|im_start|>assistant\n"


async def _count(llama: httpx.AsyncClient, text: str) -> int:
    response = await llama.post("/extras/tokenize/count", json={"input": text})
    response.raise_for_status()
    return int(response.json()["count"])


async def _tokens(llama: httpx.AsyncClient, text: str) -> list[int]:
    response = await llama.post("/extras/tokenize", json={"input": text})
    response.raise_for_status()
    return list(response.json()["tokens"])


def _shared(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


async def _user(fable: Fable, name: str) -> Caller:
    from fable_core.identity.accounts import create_user

    async with fable.db.transaction() as s:
        user = await create_user(s, name, None)
    return Caller(user_id=user.id, username="bench", role=user.role)


async def tool_sizes(fable: Fable, caller: Caller, llama: httpx.AsyncClient) -> list[tuple[str, int, int, int]]:
    """Per message: tools described, bytes/4 of their JSON, SmolLM2 tokens of their prompt text."""
    from fable_core.assistant.toolprompt import tool_prompt

    picker = fable.assistant.tools  # type: ignore[union-attr]
    rows = []
    for label, offer in [("every tool", picker.everything(caller)),
                         *[(m, picker.offer(caller, m)) for m in MESSAGES]]:
        schemas = offer.schemas()
        size = len(json.dumps(schemas, separators=(",", ":")).encode())
        rows.append((label, len(schemas), size // 4, await _count(llama, tool_prompt(schemas))))
    return rows


async def first_token(fable: Fable, caller: Caller, seen: list[dict[str, Any]], llama: httpx.AsyncClient,
                      row: Row, runs: int) -> None:
    """Send TIMED ``runs`` times; the time to the first token a follower receives, and the
    prompt the model was sent."""
    assistant = fable.assistant
    assert assistant is not None
    for _ in range(runs):
        conversation = (await fable.call("create_conversation", {}, caller))["id"]
        seen.clear()
        row.ttft.append(await _first_token(assistant, caller, conversation, TIMED))
        first = seen[0]
        row.prompt_bytes = len(json.dumps(first["messages"], separators=(",", ":")).encode())
        row.prompt_tokens = await _count(llama, _chatml(first["messages"]))
        row.tools = sum(m["content"].count('\n{"name":"') for m in first["messages"]  # one line per tool,
                        if m["role"] == "system")  # the core's and the picked ones' system messages


async def _first_token(assistant: Any, caller: Caller, conversation_id: int, message: str) -> float:
    """Seconds from sending ``message`` to the first token (or end) a follower receives; returns
    once the turn is over (its title request too)."""
    started = time.perf_counter()
    await assistant.send(caller, conversation_id, message)
    events = assistant.follow(caller, conversation_id)
    async for event in events:
        if event.event in ("token", "done", "error"):
            break
    seconds = time.perf_counter() - started
    await events.aclose()
    await assistant.wait(conversation_id)
    return seconds


async def conversation(fable: Fable, caller: Caller, seen: list[dict[str, Any]],
                       llama: httpx.AsyncClient, *, keeps_many: bool) -> Talk:
    """The CONVERSATION's turns one after another, each after the one before has ended (its title
    request too, as between a person's messages). A turn's new tokens are those after the longest
    start it shares with the request before it (one kept prompt), or with any request before it
    (``keeps_many``: llama-cpp-python's ``--cache``)."""
    assistant = fable.assistant
    assert assistant is not None
    conversation_id = (await fable.call("create_conversation", {}, caller))["id"]
    seen.clear()
    talk = Talk()
    for message in CONVERSATION:
        start = len(seen)
        ttft = await _first_token(assistant, caller, conversation_id, message)
        kept = [await _tokens(llama, _chatml(body["messages"])) for body in seen[:start]]
        kept = kept if keeps_many else kept[-1:]  # what the server read last: a title request, say
        tokens = await _tokens(llama, _chatml(seen[start]["messages"]))
        talk.turns.append(Turn(message, len(tokens), len(tokens) - max((_shared(tokens, k) for k in kept), default=0),
                               ttft))
    system = seen[0]["messages"][0]["content"]  # the stable part: system prompt, convention, core tools
    talk.stable_bytes, talk.stable_tokens = len(system.encode()), await _count(llama, system)
    return talk


async def run(settings: Settings, llama_url: str, proxy_url: str, seen: list[dict[str, Any]],
              runs: int, *, whole: bool, keeps_many: bool = False) -> tuple[Sizes, list[Row], Talk]:
    """``whole``: the tool sizes and the first turns with every tool and with picked ones; else
    the conversation."""
    from fable_core.assistant.toolpick import Offer, ToolPicker

    class EveryTool(ToolPicker):
        """Before: every tool the caller may be offered, on every turn."""

        def offer(self, caller: Caller, message: str, vector: list[float] | None = None) -> Offer:
            return self.everything(caller)

    fable = await Fable.open(settings.model_copy(update={"openai_base_url": proxy_url}))
    sizes: Sizes = []
    rows: list[Row] = []
    talk = Talk()
    try:
        assistant = fable.assistant
        assert assistant is not None
        caller = await _user(fable, f"bench{len(seen)}{time.monotonic_ns()}")
        async with httpx.AsyncClient(base_url=llama_url, timeout=600) as llama:
            if whole:
                sizes = await tool_sizes(fable, caller, llama)
                picked = assistant.tools
                rows = [Row("every tool (before)"), Row("picked for the message (now)")]
                assistant.tools = EveryTool(fable.registry, fable.availability)
                await first_token(fable, caller, seen, llama, rows[0], runs)
                assistant.tools = picked
                await first_token(fable, caller, seen, llama, rows[1], runs)
            else:
                talk = await conversation(fable, caller, seen, llama, keeps_many=keeps_many)
    finally:
        await fable.close()
    return sizes, rows, talk


@dataclass(frozen=True)
class Options:
    runs: int = option(1, "turns timed per configuration")



Result = tuple[Sizes, list[Row], list[Talk], list[tuple[int, int, int, int]]]


def figures(rows: list[Row], talks: list[Talk]) -> list[Figure]:
    """Time to the first token now (picked tools), then before (every tool), and the prompts;
    the second turn's first token on each server configuration."""
    before, now = rows
    return [Figure("first token, picked tools", statistics.median(now.ttft) * 1000, "ms", "time"),
            Figure("first token, every tool", statistics.median(before.ttft) * 1000, "ms", "time"),
            Figure("prompt tokens, picked tools", now.prompt_tokens, "tokens"),
            Figure("prompt tokens, every tool", before.prompt_tokens, "tokens"),
            Figure("stable prompt tokens", talks[0].stable_tokens, "tokens"),
            *[Figure(f"second turn first token, {t.server}", t.turns[1].ttft * 1000, "ms", "time") for t in talks]]


def render(sizes: Sizes, rows: list[Row], talks: list[Talk], memory: list[tuple[int, int, int, int]],
           machine: Machine) -> str:
    size_rows = "\n".join(f"| {label} | {n} | {b4:,} | {tok:,} |" for label, n, b4, tok in sizes)
    ttft_rows = "\n".join(
        f"| {r.config} | {r.tools} | {r.prompt_bytes // 4:,} | {r.prompt_tokens:,} | "
        f"{statistics.median(r.ttft):.1f} s ({len(r.ttft)} run{'s' if len(r.ttft) > 1 else ''}) |" for r in rows)
    talk_rows = "\n".join(f"| `{t.server}` | {n} | {turn.message} | {turn.prompt_tokens:,} | {turn.new_tokens:,} | "
                          f"{turn.ttft:.1f} s |" for t in talks for n, turn in enumerate(t.turns, 1))
    memory_rows = "\n".join(f"| {n_ctx:,} | {start:,} MB | {full:,} MB | {lean:,} MB |"
                            for n_ctx, start, full, lean in memory)
    before, now = rows
    stable = talks[0]
    second = {t.server: t.turns[1] for t in talks}
    return f"""## Small model

`python -m bench.smallmodel` — what a chat turn asks of a small local model: SmolLM2-135M-Instruct
(Q4_1) behind llama.cpp's OpenAI-compatible server (llama-cpp-python, one thread, `--logits_all
false`), in `prompt` tool mode (the tool list in the system prompt). Each request is cut to one token by a proxy, so
the times are the time to read the prompt.

{machine.describe()}

Tool schema per turn (tools described, including find_tools; bytes/4 of the JSON tool list, the
unit of the budget of 2,500; SmolLM2 tokens of the same tools as prompt text):

| message | tools | tokens (bytes/4) | SmolLM2 tokens |
|---|---|---|---|
{size_rows}

A whole turn ("{TIMED}", a fresh conversation, a context of {WIDE_CTX:,} tokens): the first
request's prompt (system prompt with the tools, the message) and the time from sending the
message to the first token a follower receives, through Fable:

| tools described | tools | prompt tokens (bytes/4) | prompt tokens (SmolLM2) | first token |
|---|---|---|---|---|
{ttft_rows}

A conversation of three turns (a context of {N_CTX:,} tokens), each sent once the one before has
ended (its title request too). Every turn's prompt starts with the same system prompt, convention
and core tools: {stable.stable_bytes:,} bytes, {stable.stable_tokens:,} SmolLM2 tokens (budget
1,500 at Qwen's 3.2 bytes a token: {stable.stable_bytes / 3.2:,.0f}). "New tokens" are the
prompt's tokens after the longest start it shares with the request the server read before it
(llama-cpp-python keeps one prompt), or with any request before it (with `--cache true` it keeps
the states of several and starts from the longest the new prompt begins with):

| server | turn | message | prompt tokens | new tokens | first token |
|---|---|---|---|---|---|
{talk_rows}

- Picking the tools cuts the prompt from {before.prompt_tokens:,} to {now.prompt_tokens:,} SmolLM2
  tokens and the time to the first token from {statistics.median(before.ttft):.1f} s to
  {statistics.median(now.ttft):.1f} s on one thread: prompt reading dominates a small model's
  first token on a CPU.
- The second turn's first token: {"; ".join(f"{t.ttft:.1f} s with `{name}`" for name, t in second.items())}.

The server's resident memory by context size, once started and once it has read a prompt as
long as its context: as started by default (its `logits_all` keeps a score for every vocabulary
entry at every position read: 49,152 × 4 bytes a token for SmolLM2), and with `--logits_all false`
(see [assistant.md](assistant.md#a-small-model-on-a-cpu) for other models):

| context (tokens) | started | context read | context read, `--logits_all false` |
|---|---|---|---|
{memory_rows}

- Not measured here: Qwen2.5-0.5B (the issue's model: this machine reaches only PyPI, npm and
  Debian, and no package there carries it) and Ollama (not installable from those either).
"""


async def _on_llama(o: Options, tmp: Path, database_url: str) -> Result:
    seen: list[dict[str, Any]] = []
    settings = load_settings({}, database_url=database_url, fable_data_dir=tmp, llm_provider="openai",
                             openai_model=MODEL_ALIAS,
                             llm_tool_modes=[f"{MODEL_ALIAS}=prompt"], fable_secret_key="bench" * 8,
                             llm_first_token_timeout=600)  # every tool: over a minute to read
    sizes: Sizes = []
    rows: list[Row] = []
    talks: list[Talk] = []
    # the first turns with a context every tool fits in; then a conversation on each server setup
    for n_ctx, server, extra in [(WIDE_CTX, "", ()), *((N_CTX, name, extra) for name, extra in SERVERS)]:
        async with running_llama(find_model(), n_ctx=n_ctx, extra=extra) as llama_url, \
                httpx.AsyncClient(base_url=llama_url, timeout=600) as client, \
                serve(proxy_app(client, seen, _one_token)) as proxy:
            got_sizes, got_rows, talk = await run(settings, llama_url, f"{proxy}/v1", seen, o.runs, whole=not server,
                                                  keeps_many="--cache" in extra)
        if not server:
            sizes, rows = got_sizes, got_rows
        else:
            talk.server = server
            talks.append(talk)
    return sizes, rows, talks, await server_memory()


def _measure(o: Options) -> Measured[Result]:
    with tempfile.TemporaryDirectory(prefix="fable-bench-") as tmp, session(Path(tmp)) as bench:
        result = asyncio.run(_on_llama(o, Path(tmp), bench.database_url))
    return bench.measured(result)


BENCH = Bench("smallmodel", __doc__, Options, _measure, lambda r, machine, memory: render(*r, machine),
              lambda r: figures(r[1], r[2]), quick=Options())


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
