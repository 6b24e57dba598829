"""The tool loop: the model gets the caller's registry tools as LLM tool schema and every call
it makes runs through the dispatcher as the user (surface "assistant"), up to 5 rounds.

Only a tool the model was offered in that round runs. A model's output is untrusted input: one
that names a tool it was never shown (model management, say, which is never offered; or any
tool in the last round, which must answer in words) gets an ``unknown_tool`` error back and
nothing runs.

Tool schemas come from the registry (``tool.input_schema``), never written by hand. A failing
call does not end the turn: the model receives the error object (``{"error": {...}}``) and can
correct itself; a near-duplicate note answers ``requires_confirmation`` with the arguments to
repeat (the error's ``confirm_arguments``, else the call's with ``confirm: true``) so the UI can
offer confirm / deny.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from fable_core.assistant.providers.base import Provider
from fable_core.caller import Caller
from fable_core.errors import FableError, NeedsConfirmation
from fable_core.tools.compact import compact
from fable_core.tools.dispatcher import Dispatcher
from fable_core.tools.progress import Progress
from fable_core.tools.registry import Registry, Tool
from fable_core.tools.suggest import unknown_tool

__all__ = ["MAX_ROUNDS", "LoopResult", "llm_tools", "run_tool_loop"]

MAX_ROUNDS = 5
RESULT_CHARS = 8000
# Managing the model server is for admins, not the model; and the model does not chat with itself.
HIDDEN_GROUPS = frozenset({"models", "turns"})
Emit = Callable[[str, dict[str, Any]], Awaitable[None]]


def _offered(t: Tool, caller: Caller) -> bool:
    if t.group in HIDDEN_GROUPS or not t.allows(caller):
        return False
    return not (t.name == "set_rag_scope" and caller.project_id is not None)


def llm_tools(registry: Registry, caller: Caller) -> list[dict[str, Any]]:
    """The registry as OpenAI/Ollama function-tool schema, filtered for this caller."""
    return [
        {"type": "function",
         "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}
        for t in registry if _offered(t, caller)
    ]


@dataclass
class LoopResult:
    text: str = ""
    tool_events: list[dict[str, Any]] = field(default_factory=list)


async def run_tool_loop(
    provider: Provider, dispatcher: Dispatcher, caller: Caller, messages: list[dict[str, Any]],
    emit: Emit, result: LoopResult, *, rounds: int = MAX_ROUNDS,
) -> LoopResult:
    """Stream the answer to ``messages``, running tool calls between rounds. ``result`` is
    filled as it goes, so a caller that is cancelled still has the partial text."""
    tools = llm_tools(dispatcher.registry, caller)
    for round_ in range(rounds + 1):
        offer = tools if round_ < rounds else None  # the last round must answer in words
        text, calls = await _one_round(provider, messages, offer, emit, result)
        if not calls or offer is None:
            return result
        offered = {t["function"]["name"] for t in offer}
        messages.append({"role": "assistant", "content": text,
                         "tool_calls": [c.as_message_part() for c in calls]})
        for call in calls:
            if call.name in offered:
                outcome = await _run_call(dispatcher, caller, call.name, call.arguments, emit, result)
            else:
                outcome = await _refuse_call(call.name, call.arguments, offered, emit, result)
            messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name,
                             "content": _as_text(outcome)})
    return result


def _as_text(outcome: dict[str, Any]) -> str:
    """A tool's outcome as the model reads it: compact JSON, at most RESULT_CHARS."""
    if "result" in outcome:
        outcome = {**outcome, "result": compact(outcome["result"])}
    return json.dumps(outcome, default=str, ensure_ascii=False, separators=(",", ":"))[:RESULT_CHARS]


async def _one_round(provider: Provider, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                     emit: Emit, result: LoopResult) -> tuple[str, list[Any]]:
    parts: list[str] = []
    calls: list[Any] = []
    async for chunk in provider.chat_stream(messages, tools):
        if chunk.text:
            parts.append(chunk.text)
            result.text += chunk.text
            await emit("token", {"text": chunk.text})
        calls.extend(chunk.tool_calls)
    return "".join(parts), calls


async def _refuse_call(name: str, arguments: dict[str, Any], offered: set[str], emit: Emit,
                       result: LoopResult) -> dict[str, Any]:
    error = unknown_tool(name, sorted(offered), " is available here")  # never a hidden tool's name
    event = {"name": name, "arguments": arguments, "error": error.to_dict(), "ok": False}
    result.tool_events.append(event)
    await emit("tool_result", event)
    return {"error": error.to_dict()}


async def _run_call(dispatcher: Dispatcher, caller: Caller, name: str, arguments: dict[str, Any],
                    emit: Emit, result: LoopResult) -> dict[str, Any]:
    event: dict[str, Any] = {"name": name, "arguments": arguments}
    await emit("tool_call", event)
    async def progress(item: Progress) -> None:  # a streaming tool's progress, in the chat's events
        await emit("tool_progress", {"name": name, "event": item.event, "data": item.data})

    try:
        outcome: dict[str, Any] = {"result": await dispatcher.call(name, arguments, caller, progress=progress)}
    except NeedsConfirmation as e:
        outcome = {"error": e.to_dict(), "requires_confirmation": True,
                   "confirm_arguments": e.details.get("confirm_arguments") or {**arguments, "confirm": True}}
    except FableError as e:
        outcome = {"error": e.to_dict()}
    event = {**event, **outcome, "ok": "error" not in outcome}
    result.tool_events.append(event)
    await emit("tool_result", event)
    return outcome
