"""Tool calls written as text: the calling convention a model reads in its system prompt, and
the calls read back from what it wrote.

Many small or local models (and servers: llama-cpp-python's default chat format ignores
``tools``) never produce a structured tool call; some write one as JSON in their answer instead.
:data:`ToolMode` says what a turn does, per model (``LLM_TOOL_MODE``, ``LLM_TOOL_MODES``):

- ``native``: tools go in the request's ``tools`` field; only structured calls count;
- ``prompt``: no ``tools`` field; the convention and the turn's stable tools (:func:`tool_prompt`)
  are appended to the system prompt, the tools picked for the message said before it
  (:func:`with_tool_prompt`), and calls are read from the answer's text;
- ``auto`` (the default): tools go in ``tools`` and a call written as text is accepted too.

:func:`parse_calls` reads what models write: a JSON object (bare, in a fenced block, or in
``<tool_call>`` tags) shaped ``{"name", "arguments"}``, ``{"tool", "args"|"parameters"}``,
``{"function": {"name", "arguments"}}``, or a list of them, ``//`` and ``/* */`` comments
allowed. Such calls run exactly like
structured ones (the dispatcher validates them), and their text is never shown as the answer.
:class:`Holdback` lets prose stream at once while holding back a line that may be a call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Container, Sequence
from typing import Any, Literal

from fable_core.assistant.providers.base import ToolCall
from fable_core.config import Settings

__all__ = ["Holdback", "ToolMode", "parse_calls", "result_message", "tool_mode", "tool_prompt", "turn_tools",
           "with_tool_prompt"]

ToolMode = Literal["auto", "native", "prompt"]
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARG_KEYS = ("arguments", "args", "parameters", "input")
_EXTRA_KEYS = frozenset({"type", "id"})
_TOOL_NAME = re.compile(r"^[a-z][a-z0-9_]{1,63}$")
_FENCE = re.compile(r"```[ \t]*([A-Za-z_]*)[ \t]*\n?(.*?)(?:```|$)", re.DOTALL)
_TAGGED = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_CALL_FENCES = frozenset({"", "json", "tool_call", "tool_code", "tool"})

_CONVENTION = (
    "To use a tool, reply with only a JSON object and nothing else: "
    '{{"name": "<tool name>", "arguments": {{...}}}}. The result comes back in the next message; '
    "then answer in words. Tools:\n{tools}"
)


def tool_mode(settings: Settings, model: str | None) -> ToolMode:
    """The mode for ``model``: its entry in ``LLM_TOOL_MODES`` (``model=mode``), else ``LLM_TOOL_MODE``."""
    for entry in settings.llm_tool_modes:
        name, _, mode = entry.rpartition("=")
        if name.strip() == model:
            return mode.strip()  # type: ignore[return-value]  # checked by Settings
    return settings.llm_tool_mode


def tool_prompt(schemas: Sequence[dict[str, Any]]) -> str:
    """The convention and the tools, one compact JSON line each, for the system prompt."""
    return _CONVENTION.format(tools="\n".join(_line(s) for s in schemas))


def _line(schema: dict[str, Any]) -> str:
    f = schema["function"]
    return json.dumps({"name": f["name"], "description": f["description"], "parameters": f["parameters"]},
                      ensure_ascii=False, separators=(",", ":"))


def with_tool_prompt(messages: list[dict[str, Any]], stable: Sequence[dict[str, Any]],
                     turn: Sequence[dict[str, Any]] = (), at: int | None = None) -> list[dict[str, Any]]:
    """``messages`` with the convention and the ``stable`` tools appended to the system message
    (one added if none), and the ``turn``'s own tools in a system message just before message
    ``at`` (the turn's): what is the same on every turn comes first, so a server's prompt cache
    reads it once a conversation. Not in the message itself: a small model took a tool list
    opening the user's words for the user asking about tools (``bench.smalleval``)."""
    if not stable:
        stable, turn = list(turn), []
    section = tool_prompt(stable)
    if messages and messages[0]["role"] == "system":
        out = [{**messages[0], "content": f"{messages[0]['content']}\n\n{section}"}, *messages[1:]]
    else:
        out = [{"role": "system", "content": section}, *messages]
        at = None if at is None else at + 1
    if turn and at is not None:
        out.insert(at, {"role": "system", "content": turn_tools(turn)})
    return out


def turn_tools(schemas: Sequence[dict[str, Any]]) -> str:
    """The tools picked for one message, said before it."""
    return "More tools, for this message:\n" + "\n".join(_line(s) for s in schemas)


def result_message(results: list[tuple[str, str]]) -> dict[str, Any]:
    """The results of calls the model wrote as text, as the next user message (a server that
    never saw a structured call may refuse ``tool`` messages)."""
    return {"role": "user", "content": "\n\n".join(f"Result of {name}: {text}" for name, text in results)}


def parse_calls(text: str, known: Container[str] = ()) -> list[ToolCall]:
    """The tool calls ``text`` consists of, or ``[]`` when it is not (only) tool calls.

    A JSON value counts as a call when it has a tool name and either an arguments object or a
    name in ``known``, and nothing else besides ``type`` and ``id``. Text after the calls (a model
    imagining the result, say) is dropped; text before them means it is an answer."""
    body = _unwrap(text.strip())
    if body is None:
        return []
    if "//" in body or "/*" in body:  # small models annotate their calls: comments are no JSON
        body = _without_comments(body)
    decoder = json.JSONDecoder()
    values: list[Any] = []
    at = 0
    while at < len(body):
        while at < len(body) and body[at].isspace():
            at += 1
        if at >= len(body) or body[at] not in "{[":
            break
        try:
            value, at = decoder.raw_decode(body, at)
        except json.JSONDecodeError:
            break
        values.append(value)
    items = [v for value in values for v in (value if isinstance(value, list) else [value])]
    calls = [_as_call(item, known, i) for i, item in enumerate(items)]
    if not calls or any(c is None for c in calls):
        return []
    return [c for c in calls if c is not None]


def _without_comments(text: str) -> str:
    """``text`` without ``// …`` and ``/* … */`` comments outside JSON strings (a URL's ``//``
    inside a string stays)."""
    out: list[str] = []
    i, n, quoted = 0, len(text), False
    while i < n:
        ch = text[i]
        if quoted:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
            out.append(ch)
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _unwrap(text: str) -> str | None:
    """The JSON inside ``<tool_call>`` tags or ```json fences (all of them), or the text itself."""
    if text.startswith("<tool_call>"):
        return "\n".join(m.group(1) for m in _TAGGED.finditer(text))
    if text.startswith("```"):
        blocks = list(_FENCE.finditer(text))
        if not blocks or any(m.group(1).lower() not in _CALL_FENCES for m in blocks):
            return None
        return "\n".join(m.group(2) for m in blocks)
    return text if text[:1] in ("{", "[") else None


def _as_call(item: Any, known: Container[str], index: int) -> ToolCall | None:
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("function"), dict) and set(item) <= {"function", *_EXTRA_KEYS}:
        item = item["function"]  # {"type": "function", "function": {"name", "arguments"}}
    name_key = next((k for k in _NAME_KEYS if isinstance(item.get(k), str)), None)
    arg_keys = [k for k in _ARG_KEYS if k in item]
    if name_key is None or len(arg_keys) > 1 or set(item) - {name_key, *arg_keys, *_EXTRA_KEYS}:
        return None
    name = item[name_key].strip()
    if not _TOOL_NAME.match(name) or not (arg_keys or name in known):
        return None
    arguments = item[arg_keys[0]] if arg_keys else {}
    if isinstance(arguments, str):  # OpenAI style: the arguments as a JSON string
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError:
            arguments = {"_invalid_json": arguments}
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        arguments = {"_invalid_arguments": arguments}
    return ToolCall(f"text_call_{index}", name, arguments)


class Holdback:
    """Splits a streamed answer into text to show now and text held back because it may be a
    tool call: a line that starts with ``{``, ``[{``, a ```json fence or ``<tool_call>``.
    Prose streams as it comes; a held line is released as soon as it cannot be a call."""

    def __init__(self) -> None:
        self.held = ""
        self._line_start = True
        self._space = ""  # whitespace at the start of a line, shown once the line is known

    def feed(self, text: str) -> str:
        """Add a streamed piece; returns what can be shown now."""
        shown: list[str] = []
        for ch in text:
            if self.held:
                self.held += ch
                if _may_be_call(self.held) is False:
                    shown.append(self.release())
            elif self._line_start and ch.isspace():
                self._space += ch
            elif self._line_start and ch in "{[`<":
                self.held, self._space = self._space + ch, ""
            else:
                shown.append(self._space + ch)
                self._space = ""
                self._line_start = ch == "\n"
        return "".join(shown)

    def release(self) -> str:
        """Give up holding: everything held, to be shown."""
        out, self.held = self.held, ""
        self._line_start = out.endswith("\n")
        return out

    def finish(self) -> str:
        """The end of the answer: whitespace still waiting (what is held is the caller's to judge)."""
        out, self._space = self._space, ""
        return out


def _may_be_call(held: str) -> bool | None:
    """False once ``held`` can no longer be the start of a tool call."""
    s = held.lstrip()
    if s.startswith("`"):
        if not "```".startswith(s[:3]):
            return False
        if "\n" not in s:
            return None
        return s[3:s.index("\n")].strip().lower() in _CALL_FENCES
    if s.startswith("<"):
        return "<tool_call>".startswith(s[:11]) or s.startswith("<tool_call>")
    if s.startswith("["):
        rest = s[1:].lstrip()
        return None if not rest else rest[0] == "{"
    if s.startswith("{"):
        rest = s[1:].lstrip()
        return None if not rest else rest[0] == '"'
    return None
