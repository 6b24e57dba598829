"""Which tools a chat turn describes to the model: a small core, the tools the message is about,
and ``find_tools`` for the rest, within a budget.

Every tool schema the model reads is prompt it pays for on every round of every turn; on a CPU a
small model spent minutes reading all of them before its first token. So a turn describes:

- the **core** (:data:`CORE`: search, read and create notes, list and complete tasks), always,
  first and in a fixed order, with ``find_tools``: with the system prompt, the stable prefix a
  model server caches from one turn to the next (:data:`STABLE_TOKENS`);
- up to :data:`MAX_PICKED` tools **picked for the message**: by words the message shares with a
  tool's name, title, group and description (weighted by how rare the word is among the tools,
  with a few synonyms, e.g. "hours" finds tools about minutes of work), and, when an embedding
  model answers, by how close the message's embedding (the one the turn computes for its context
  anyway) is to each tool's (embedded once per process, in the background);
- **find_tools**, which the model calls with a few words to have more tools described in the
  following rounds.

A tool is described lean (:func:`schema_of`): its description's first paragraph and its input
schema without bounds and defaults, which the dispatcher still checks and explains when a call
crosses them. All of them within :data:`BUDGET_BYTES` of tool list JSON (about 2,500 tokens at 4 bytes a
token): a picked tool that would cross it is left out. The selection decides what is described,
not what may run: any tool the caller may be offered (:meth:`ToolPicker.eligible`, from
``Registry.for_caller`` with the runtime's availability) runs when the model names it, with the
dispatcher's validation; anything else is refused.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fable_core.errors import FableError
from fable_core.tools.availability import Availability
from fable_core.tools.caller import Caller
from fable_core.tools.registry import Registry, Tool
from fable_core.tools.tool_search import ToolIndex
from fable_core.toolsets.discovery import FIND_TOOLS

if TYPE_CHECKING:
    from fable_core.assistant.embeddings import Embedder

__all__ = ["BUDGET_BYTES", "CORE", "FIND_TOOLS", "MAX_PICKED", "STABLE_TOKENS", "Offer", "ToolPicker",
           "schema_of", "schemas_bytes"]

_log = logging.getLogger(__name__)
CORE = ("search_notes", "read_note", "create_note", "list_tasks", "complete_task")
# The system prompt and the core's tools, as a model's tokenizer reads them (JSON schema text is
# about 3.2 bytes a token, prose about 4): what every turn of every chat starts with. update_note
# (1,300 bytes lean) is picked when a message asks for a change rather than carried by all.
STABLE_TOKENS = 1_500
MAX_PICKED = 4
BUDGET_BYTES = 10_000  # ≈ 2,500 tokens of tool schema per turn, at 4 bytes a token
MAX_FOUND = 4
TOOL_RELEVANCE = 2.0  # spreads above the message's baseline, as for a suggested note (assistant.context)

# Bounds and defaults: the dispatcher checks them and its error says which was crossed, so a
# model is not told them up front on every round.
_UNSAID = frozenset({"maxLength", "minLength", "minimum", "maximum", "maxItems", "minItems", "default"})


def schema_of(t: Tool) -> dict[str, Any]:
    """A tool as OpenAI/Ollama function-tool schema, lean: the first paragraph of its description
    (the rest is for agents that read documentation) and its advertised input schema without
    bounds and defaults. Every property stays, so any call the tool takes can be written."""
    return {"type": "function",
            "function": {"name": t.name, "description": brief(t.description), "parameters": _lean(t.input_schema)}}


def brief(description: str) -> str:
    """A description's first paragraph, on one line."""
    return " ".join(description.split("\n\n", 1)[0].split())


def _lean(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_lean(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    return {k: ({n: _lean(p) for n, p in v.items()} if k == "properties" else _lean(v))
            for k, v in schema.items() if k not in _UNSAID}


def schemas_bytes(tools: Sequence[Tool]) -> int:
    """The size of the tool list JSON a model reads (a token is about 4 of these bytes)."""
    return len(json.dumps([schema_of(t) for t in tools], ensure_ascii=False, separators=(",", ":")).encode())


@dataclass
class Offer:
    """The tools of one turn: those described to the model, and those it may run. The first
    ``stable`` described tools (the core) are the same on every turn: with ``find_tools`` they
    come first (:meth:`stable_schemas`), the picked ones after (:meth:`turn_schemas`)."""

    described: list[Tool]
    runnable: dict[str, Tool]
    picker: ToolPicker | None = None
    found: list[str] = field(default_factory=list)
    stable: int = 0

    def schemas(self) -> list[dict[str, Any]]:
        return [*self.stable_schemas(), *self.turn_schemas()]

    def stable_schemas(self) -> list[dict[str, Any]]:
        core = self.described[:self.stable]
        return [schema_of(t) for t in ([*core, FIND_TOOLS] if self.picker is not None else core)]

    def turn_schemas(self) -> list[dict[str, Any]]:
        return [schema_of(t) for t in self.described[self.stable:]]

    def add(self, names: Sequence[str]) -> None:
        """Describe these tools from the next round on (what find_tools found)."""
        have = {t.name for t in self.described}
        self.described += [self.runnable[n] for n in names if n in self.runnable and n not in have]


class ToolPicker:
    """Picks each turn's tools (see the module docstring); one per assistant."""

    def __init__(self, registry: Registry, availability: Availability | None = None,
                 embedder: Embedder | None = None) -> None:
        self.registry = registry
        self.availability = availability
        self.embedder = embedder
        self.index = ToolIndex(registry)
        self._vectors: dict[str, list[float]] = {}
        self._embedding: asyncio.Task[None] | None = None

    def eligible(self, caller: Caller) -> list[Tool]:
        """Every tool the assistant may offer ``caller``: what the registry offers it (scope,
        admin, services up), less those not for the assistant (``assistant=False``: managing the
        model server, its own turns, its model) and, in a project's workspace, the scope."""
        return [t for t in self.registry.for_agents(caller, self.availability)
                if t.assistant
                and not (t.name == "set_rag_scope" and caller.project_id is not None)]

    def everything(self, caller: Caller) -> Offer:
        """An offer that describes every eligible tool (no selection, no find_tools)."""
        tools = self.eligible(caller)
        return Offer(tools, {t.name: t for t in tools})

    def offer(self, caller: Caller, message: str, vector: list[float] | None = None) -> Offer:
        """The core plus the tools picked for ``message``, with find_tools, within the budget."""
        tools = self.eligible(caller)
        runnable = {t.name: t for t in tools}
        core = [runnable[n] for n in CORE if n in runnable]
        described = list(core)
        used = schemas_bytes([*described, FIND_TOOLS])
        for t in self.rank(tools, message, vector, exclude={t.name for t in described})[:MAX_PICKED]:
            size = schemas_bytes([t]) + 1
            if used + size <= BUDGET_BYTES:
                described.append(t)
                used += size
        return Offer(described, runnable, picker=self, stable=len(core))

    def rank(self, tools: Sequence[Tool], text: str, vector: list[float] | None = None,
             exclude: set[str] | frozenset[str] = frozenset()) -> list[Tool]:
        """The tools ``text`` is about, best first: those sharing words with it, and the three
        closest by embedding when vectors exist, fused by reciprocal rank."""
        candidates = [t for t in tools if t.name not in exclude]
        fused = {t.name: 1 / (10 + rank) for rank, (_, t) in enumerate(self.index.rank(candidates, text))}
        if vector is not None:
            self._start_embedding()
            cut = self._related_from(vector)
            close = sorted(((_cosine(vector, self._vectors[t.name]), t) for t in candidates
                            if t.name in self._vectors), key=lambda x: -x[0])
            for rank, (_, t) in enumerate([c for c in close if c[0] >= cut][:3]):
                fused[t.name] = fused.get(t.name, 0.0) + 1 / (10 + rank)
        by_name = {t.name: t for t in candidates}
        return [by_name[n] for n in sorted(fused, key=lambda n: -fused[n])]

    def _related_from(self, vector: list[float]) -> float:
        """The similarity a tool's text needs to be picked for the message: as for a note the
        chat would suggest, calibrated per model (every text is *some* distance away, so the
        closest three alone would pick tools for "hello")."""
        assert self.embedder is not None
        try:
            return self.embedder.similarity_at(vector, TOOL_RELEVANCE)
        except RuntimeError:  # a vector the embedder did not calibrate: no picks by meaning
            return math.inf

    def find(self, query: str, offer: Offer) -> list[dict[str, str]]:
        """find_tools: the eligible tools ``query`` is about that are not described yet."""
        have = {t.name for t in offer.described}
        found = self.rank(list(offer.runnable.values()), query, exclude=have)[:MAX_FOUND]
        return [{"name": t.name, "description": t.description.split("\n")[0]} for t in found]

    def _start_embedding(self) -> None:
        """Embed every tool's text once, in the background (the turn does not wait for it)."""
        if self.embedder is None or self._embedding is not None or not self.embedder.available:
            return
        self._embedding = asyncio.get_running_loop().create_task(self._embed_tools())

    async def _embed_tools(self) -> None:
        assert self.embedder is not None
        tools = list(self.registry)
        texts = [f"{t.title}: {t.description}" for t in tools]
        try:
            vectors = await self.embedder.embed(texts)
        except FableError as e:
            _log.info("could not embed the tool descriptions: %s", e.message)
            self._embedding = None  # try again on a later turn
            return
        self._vectors = {t.name: v for t, v in zip(tools, vectors, strict=True)}


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b):
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0
