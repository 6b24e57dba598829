"""The tool loop: the model is offered the turn's tools and every call it makes runs through
the dispatcher as the user (surface "assistant"), up to 5 rounds.

Which tools are described to the model is :mod:`.toolpick`'s choice (a core, those picked for
the message, and ``find_tools`` for more); which may run is not: any tool the caller may be
offered (:meth:`ToolPicker.eligible`) runs when the model names it. A model's output is
untrusted input: one that names any other tool (model management, say, which is never offered;
or any tool in the last round, which must answer in words) gets an ``unknown_tool`` error back
and nothing runs.

How tools reach the model is the model's :data:`~.toolprompt.ToolMode`: as the request's
``tools`` (``native``), in the system prompt with calls read from the answer's text
(``prompt``), or both (``auto``). A call written as text runs exactly like a structured one,
and its text is never shown as the answer (:mod:`.toolprompt`).

Tool schemas come from the registry (``tool.input_schema``), never written by hand. A failing
call does not end the turn: the model receives the error object (``{"error": {...}}``) and can
correct itself; a near-duplicate note answers ``requires_confirmation`` with the arguments to
repeat (the error's ``confirm_arguments``, else the call's with ``confirm: true``) so the UI can
offer confirm / deny. Every call's event carries ``at``, how many characters of the answer's
text came before it, so a client shows text and tool cards in the order they happened.

A tool that destroys, sends data out or gives others access (``@tool(confirm=...)``: ``delete_*``,
``share``, ``add_group_member``, ``cache_image``, ``subscribe_feed``, ``research``...) never runs
on the model's word alone: a page it read or a message it was shown may be an attacker's
instructions. Its call answers ``requires_confirmation`` with the call's own arguments; the UI's
Confirm runs it as the user, over REST, and the model is told to say what it proposed.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Container
from dataclasses import dataclass, field
from typing import Any

from fable_core.assistant.providers.base import Provider, ToolCall
from fable_core.assistant.toolpick import FIND_TOOLS, Offer, ToolPicker
from fable_core.assistant.toolprompt import Holdback, ToolMode, parse_calls, result_message, with_tool_prompt
from fable_core.errors import FableError, NeedsConfirmation, Unavailable, UnknownTool
from fable_core.tools.availability import Availability
from fable_core.tools.binary import Blob
from fable_core.tools.caller import Caller
from fable_core.tools.compact import compact
from fable_core.tools.dispatcher import Dispatcher, check_arguments
from fable_core.tools.progress import Progress
from fable_core.tools.registry import Registry, Tool
from fable_core.tools.suggest import unknown_tool

__all__ = ["MAX_ROUNDS", "LoopResult", "NoAnswer", "llm_tools", "run_tool_loop", "what_was_done"]

MAX_ROUNDS = 5
RESULT_CHARS = 8000
Emit = Callable[[str, dict[str, Any]], Awaitable[None]]


def llm_tools(registry: Registry, caller: Caller, available: Availability | None = None) -> list[dict[str, Any]]:
    """Every tool the assistant may offer ``caller``, as OpenAI/Ollama function-tool schema."""
    return ToolPicker(registry, available).everything(caller).schemas()


@dataclass
class LoopResult:
    text: str = ""
    tool_events: list[dict[str, Any]] = field(default_factory=list)
    system: dict[str, Any] | None = None  # the first request's system message, as sent


async def run_tool_loop(
    provider: Provider, dispatcher: Dispatcher, caller: Caller, messages: list[dict[str, Any]],
    emit: Emit, result: LoopResult, *, offer: Offer | None = None, mode: ToolMode = "native",
    rounds: int = MAX_ROUNDS,
) -> LoopResult:
    """Stream the answer to ``messages``, running tool calls between rounds. ``result`` is
    filled as it goes, so a caller that is cancelled still has the partial text. Without an
    ``offer``, every tool the caller may be offered is described."""
    offer = offer or ToolPicker(dispatcher.registry).everything(caller)
    answered: dict[str, str] = {}  # each call made (name and arguments) → its outcome as the model read it
    last = rounds  # the round that must answer in words
    at = len(messages) - 1  # the turn's message: the tools picked for it are said before it
    for round_ in range(rounds + 1):
        schemas = offer.schemas() if round_ < last else []
        # In prompt mode the tools stay described in the last round too (its calls are not run):
        # the prompt the server read last round is then the start of this one, and not read again.
        request = (with_tool_prompt(messages, offer.stable_schemas(), offer.turn_schemas(), at)
                   if mode == "prompt" and offer.described else messages)
        tools = schemas if mode != "prompt" and schemas else None
        if round_ == 0 and request and request[0]["role"] == "system":
            result.system = request[0]
        text, calls, written = await _one_round(provider, request, tools, emit, result,
                                                read_text=mode != "native", known=offer.runnable)
        if not calls or not schemas:
            break
        if written:
            messages.append({"role": "assistant", "content": text})
        else:
            messages.append({"role": "assistant", "content": text,
                             "tool_calls": [c.as_message_part() for c in calls]})
        outcomes: list[tuple[ToolCall, str]] = []
        for call in calls:
            key = json.dumps([call.name, call.arguments], sort_keys=True, default=str)
            if key in answered:  # a small model calling again what it has: it answers from that now
                outcomes.append((call, REPEATED.format(name=call.name, outcome=answered[key])))
                last = round_ + 1
                continue
            answered[key] = _as_text(await _answer(dispatcher, caller, offer, call, emit, result))
            outcomes.append((call, answered[key]))
        if written:
            messages.append(result_message([(call.name, outcome) for call, outcome in outcomes]))
        else:
            messages += [{"role": "tool", "tool_call_id": call.id, "name": call.name, "content": outcome}
                         for call, outcome in outcomes]
    if not result.text.strip():  # never a turn ended with nothing said
        said = what_was_done(dispatcher.registry, result.tool_events)
        if not said:
            raise NoAnswer("the model answered nothing (no words, no tool call): try again, or use a larger model")
        await _show(said, emit, result)
    return result


REPEATED = ("You already called {name} with these arguments; its result was: {outcome}. "
            "Do not call it again: answer the user in words from that result.")


class NoAnswer(Unavailable):
    """A model that answered a turn with nothing at all: an error the user can retry, never an
    empty answer stored as done."""

    type = "empty_answer"


def what_was_done(registry: Registry, events: list[dict[str, Any]]) -> str:
    """The turn's tool calls said in words, for a model that ran them and then said nothing
    (small models do): what ran, what waits for confirmation, what failed."""
    lines = []
    for event in events:
        t = registry.get(event["name"])
        title = t.title if t is not None else event["name"]
        if event.get("requires_confirmation"):
            lines.append(f"- {title}: waiting for your confirmation.")
        elif "error" in event:
            lines.append(f"- {title} failed: {event['error'].get('message', 'error')}")
        else:
            lines.append(f"- {title}: {_brief(event.get('result'))}")
    return "\n".join(lines)


def _brief(result: Any) -> str:
    """A tool result in a few words: its title or name, else its value, else "done"."""
    if isinstance(result, dict):
        for key in ("title", "name", "result", "message"):
            if isinstance(result.get(key), str | int | float) and str(result[key]).strip():
                return f"“{result[key]}”" if key in ("title", "name") else str(result[key])
        if isinstance(result.get("items"), list):
            return f"{len(result['items'])} found"
    return "done"


async def _answer(dispatcher: Dispatcher, caller: Caller, offer: Offer, call: ToolCall, emit: Emit,
                  result: LoopResult) -> dict[str, Any]:
    if call.name == FIND_TOOLS.name and offer.picker is not None:
        return await _find_tools(offer, caller, call, emit, result)
    if call.name in offer.runnable:
        return await _run_call(dispatcher, caller, call.name, call.arguments, emit, result)
    offered = [schema["function"]["name"] for schema in offer.schemas()]
    return await _refuse_call(call.name, call.arguments, sorted(offer.runnable), offered, emit, result)


def _as_text(outcome: dict[str, Any]) -> str:
    """A tool's outcome as the model reads it: compact JSON, at most RESULT_CHARS."""
    if "result" in outcome:
        outcome = {**outcome, "result": compact(outcome["result"])}
    return json.dumps(outcome, default=str, ensure_ascii=False, separators=(",", ":"))[:RESULT_CHARS]


async def _one_round(provider: Provider, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                     emit: Emit, result: LoopResult, *, read_text: bool,
                     known: Container[str]) -> tuple[str, list[ToolCall], bool]:
    """One model request: its whole text, its tool calls, and whether they were written as text.
    With ``read_text``, a line that may be a call is held back, and shown only if it is not one."""
    parts: list[str] = []
    calls: list[ToolCall] = []
    holdback = Holdback() if read_text else None
    async for chunk in provider.chat_stream(messages, tools):
        if chunk.text:
            parts.append(chunk.text)
            await _show(holdback.feed(chunk.text) if holdback else chunk.text, emit, result)
        calls.extend(chunk.tool_calls)
    if holdback is None:
        return "".join(parts), calls, False
    await _show(holdback.finish(), emit, result)
    written = parse_calls(holdback.held, known) if holdback.held and not calls else []
    if not written:
        await _show(holdback.release(), emit, result)
    return "".join(parts), written or calls, bool(written)


async def _show(text: str, emit: Emit, result: LoopResult) -> None:
    if text:
        result.text += text
        await emit("token", {"text": text})


async def _find_tools(offer: Offer, caller: Caller, call: ToolCall, emit: Emit, result: LoopResult) -> dict[str, Any]:
    """find_tools, answered by the loop: the tools found are described from the next round on."""
    assert offer.picker is not None
    event: dict[str, Any] = {"name": call.name, "arguments": call.arguments, "at": len(result.text)}
    await emit("tool_call", event)
    try:
        query = check_arguments(FIND_TOOLS, call.arguments, caller)["query"]
    except FableError as e:
        outcome: dict[str, Any] = {"error": e.to_dict()}
    else:
        found = offer.picker.find(query, offer)
        offer.add([f["name"] for f in found])
        outcome = {"result": {"tools": found}}
    event = {**event, **outcome, "ok": "error" not in outcome}
    result.tool_events.append(event)
    await emit("tool_result", event)
    return outcome


async def _to_confirm(dispatcher: Dispatcher, t: Tool, arguments: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """The answer to a call the user must confirm: rehearsed first (:meth:`Dispatcher.rehearse`),
    so a call that would fail gets its error, not a button."""
    try:
        await dispatcher.rehearse(t.name, arguments, caller)
    except NeedsConfirmation as e:  # its own question (a near-duplicate): the user answers that one
        return {"error": e.to_dict(), "requires_confirmation": True,
                "confirm_arguments": e.details.get("confirm_arguments") or {**arguments, "confirm": True}}
    except FableError as e:
        return {"error": e.to_dict()}
    error = NeedsConfirmation(f"{t.name} ({t.title.lower()}) runs only once the user confirms it: tell them what it "
                              "will do and that they can confirm it here; it has not run", tool=t.name)
    return {"error": error.to_dict(), "requires_confirmation": True, "confirm_arguments": arguments}


async def _refuse_call(name: str, arguments: dict[str, Any], runnable: list[str], offered: list[str], emit: Emit,
                       result: LoopResult) -> dict[str, Any]:
    error = unknown_tool(name, runnable, " is available here")  # never a hidden tool's name
    if "did_you_mean" not in error.details and offered:  # a wild name: the ones it was shown
        error = UnknownTool(f"{error.message}; the tools offered: {', '.join(offered)}", name=name)
    event = {"name": name, "arguments": arguments, "at": len(result.text), "error": error.to_dict(), "ok": False}
    result.tool_events.append(event)
    await emit("tool_result", event)
    return {"error": error.to_dict()}


def _known_arguments(t: Tool | None, arguments: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A model's call without the arguments its tool does not take (a small model adds one: the
    call runs, and the model is told), and their names. Markers of arguments that were no JSON
    object stay, for the dispatcher to refuse."""
    properties = (t.input_schema.get("properties") or {}) if t is not None else {}
    ignored = sorted(k for k in arguments if k not in properties and not k.startswith("_invalid"))
    if t is None or not ignored:
        return arguments, []
    return {k: v for k, v in arguments.items() if k not in ignored}, ignored


async def _run_call(dispatcher: Dispatcher, caller: Caller, name: str, arguments: dict[str, Any],
                    emit: Emit, result: LoopResult) -> dict[str, Any]:
    event: dict[str, Any] = {"name": name, "arguments": arguments, "at": len(result.text)}
    await emit("tool_call", event)
    t = dispatcher.registry.get(name)
    if t is not None and t.confirm:
        held = await _to_confirm(dispatcher, t, arguments, caller)
        event = {**event, **held, "ok": False}
        result.tool_events.append(event)
        await emit("tool_result", event)
        return held

    async def progress(item: Progress) -> None:  # a streaming tool's progress, in the chat's events
        await emit("tool_progress", {"name": name, "event": item.event, "data": item.data})

    arguments, ignored = _known_arguments(t, arguments)
    try:
        answer = await dispatcher.run(name, arguments, caller, progress=progress)
        outcome: dict[str, Any] = {"result": answer.described() if isinstance(answer, Blob)
                                   else answer.model_dump(mode="json")}
        if ignored:
            outcome["ignored"] = f"{name} takes no {', '.join(ignored)}: left out"
    except NeedsConfirmation as e:
        outcome = {"error": e.to_dict(), "requires_confirmation": True,
                   "confirm_arguments": e.details.get("confirm_arguments") or {**arguments, "confirm": True}}
    except FableError as e:
        outcome = {"error": e.to_dict()}
    event = {**event, **outcome, "ok": "error" not in outcome}
    result.tool_events.append(event)
    await emit("tool_result", event)
    return outcome
