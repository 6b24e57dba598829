"""Tools a small model can afford: the prompt of a chat turn, and the time to its first token
with a real small model, when every tool is described (before issue 22) and when the turn
describes the tools picked for its message (now).

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
MESSAGES = ("remind me to call the dentist tomorrow", "what did I write about the kitchen",
            "log 2 hours on the report", "how many hours did I work on project X")
TIMED = "log 2 hours on the report"


@dataclass
class Row:
    config: str
    tools: int = 0
    tool_bytes: int = 0
    prompt_bytes: int = 0
    prompt_tokens: int = 0
    ttft: list[float] = field(default_factory=list)


def _one_token(body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "max_tokens": 1, "temperature": 0}


def _chatml(messages: list[dict[str, Any]]) -> str:
    """The prompt as SmolLM2's chat template renders it (ChatML)."""
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages) + "<|im_start|>assistant\n"


async def _count(llama: httpx.AsyncClient, text: str) -> int:
    response = await llama.post("/extras/tokenize/count", json={"input": text})
    response.raise_for_status()
    return int(response.json()["count"])


async def _user(fable: Fable) -> Caller:
    from fable_core.identity.accounts import create_user

    async with fable.db.transaction() as s:
        user = await create_user(s, "bench", None)
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
        started = time.perf_counter()
        await assistant.send(caller, conversation, TIMED)
        events = assistant.follow(caller, conversation)
        async for event in events:
            if event.event in ("token", "done", "error"):
                break
        row.ttft.append(time.perf_counter() - started)
        await events.aclose()
        await assistant.wait(conversation)
        first = seen[0]
        row.prompt_bytes = len(json.dumps(first["messages"], separators=(",", ":")).encode())
        row.prompt_tokens = await _count(llama, _chatml(first["messages"]))
        row.tools = first["messages"][0]["content"].count('\n{"name":"')  # one line per tool


async def run(settings: Settings, llama_url: str, proxy_url: str, seen: list[dict[str, Any]],
              runs: int) -> tuple[list[tuple[str, int, int, int]], list[Row]]:
    from fable_core.assistant.toolpick import Offer, ToolPicker

    class EveryTool(ToolPicker):
        """Before: every tool the caller may be offered, on every turn."""

        def offer(self, caller: Caller, message: str, vector: list[float] | None = None) -> Offer:
            return self.everything(caller)

    fable = await Fable.open(settings.model_copy(update={"openai_base_url": proxy_url}))
    try:
        assistant = fable.assistant
        assert assistant is not None
        caller = await _user(fable)
        async with httpx.AsyncClient(base_url=llama_url, timeout=600) as llama:
            sizes = await tool_sizes(fable, caller, llama)
            picked = assistant.tools
            rows = [Row("every tool (before)"), Row("picked for the message (now)")]
            assistant.tools = EveryTool(fable.registry, fable.availability)
            await first_token(fable, caller, seen, llama, rows[0], runs)
            assistant.tools = picked
            await first_token(fable, caller, seen, llama, rows[1], runs)
    finally:
        await fable.close()
    return sizes, rows



@dataclass(frozen=True)
class Options:
    runs: int = option(1, "turns timed per configuration")



def figures(rows: list[Row]) -> list[Figure]:
    """Time to the first token now (picked tools), then before (every tool), and the prompts."""
    before, now = rows
    return [Figure("first token, picked tools", statistics.median(now.ttft) * 1000, "ms", "time"),
            Figure("first token, every tool", statistics.median(before.ttft) * 1000, "ms", "time"),
            Figure("prompt tokens, picked tools", now.prompt_tokens, "tokens"),
            Figure("prompt tokens, every tool", before.prompt_tokens, "tokens")]


def render(sizes: list[tuple[str, int, int, int]], rows: list[Row], machine: Machine) -> str:
    size_rows = "\n".join(f"| {label} | {n} | {b4:,} | {tok:,} |" for label, n, b4, tok in sizes)
    ttft_rows = "\n".join(
        f"| {r.config} | {r.tools} | {r.prompt_bytes // 4:,} | {r.prompt_tokens:,} | "
        f"{statistics.median(r.ttft):.1f} s ({len(r.ttft)} run{'s' if len(r.ttft) > 1 else ''}) |" for r in rows)
    before, now = rows
    return f"""## Small model

`python -m bench.smallmodel` — what a chat turn asks of a small local model: SmolLM2-135M-Instruct
(Q4_1) behind llama.cpp's OpenAI-compatible server, one thread, in `prompt` tool mode (the tool
list in the system prompt).

{machine.describe()}

Tool schema per turn (tools described, including find_tools; bytes/4 of the JSON tool list, the
unit of the budget of 2,500; SmolLM2 tokens of the same tools as prompt text):

| message | tools | tokens (bytes/4) | SmolLM2 tokens |
|---|---|---|---|
{size_rows}

A whole turn ("{TIMED}", a fresh conversation): the first request's prompt (system prompt with
the tools, the message) and the time from sending the message to the first token a follower
receives, through Fable:

| tools described | tools | prompt tokens (bytes/4) | prompt tokens (SmolLM2) | first token |
|---|---|---|---|---|
{ttft_rows}

- Picking the tools cuts the prompt from {before.prompt_tokens:,} to {now.prompt_tokens:,} SmolLM2
  tokens and the time to the first token from {statistics.median(before.ttft):.1f} s to
  {statistics.median(now.ttft):.1f} s on one thread: prompt reading dominates a small model's
  first token on a CPU.
"""


Sizes = list[tuple[str, int, int, int]]


async def _on_llama(o: Options, tmp: Path, database_url: str) -> tuple[Sizes, list[Row]]:
    seen: list[dict[str, Any]] = []

    def one_token(body: dict[str, Any]) -> dict[str, Any]:
        return _one_token(body)

    async with running_llama(find_model(), n_ctx=N_CTX) as llama_url, \
            httpx.AsyncClient(base_url=llama_url, timeout=600) as client, \
            serve(proxy_app(client, seen, one_token)) as proxy:
        settings = load_settings({}, database_url=database_url, fable_data_dir=tmp, llm_provider="openai",
                                 openai_model=MODEL_ALIAS,
                                 llm_tool_modes=[f"{MODEL_ALIAS}=prompt"], fable_secret_key="bench" * 8)
        return await run(settings, llama_url, f"{proxy}/v1", seen, o.runs)


def _measure(o: Options) -> Measured[tuple[Sizes, list[Row]]]:
    with tempfile.TemporaryDirectory(prefix="fable-bench-") as tmp, session(Path(tmp)) as bench:
        result = asyncio.run(_on_llama(o, Path(tmp), bench.database_url))
    return bench.measured(result)


BENCH = Bench("smallmodel", __doc__, Options, _measure, lambda r, machine, memory: render(*r, machine),
              lambda r: figures(r[1]), quick=Options())


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
