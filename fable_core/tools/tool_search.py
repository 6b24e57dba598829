"""Finding tools by words: the ranking the assistant's tool pick and ``find_tools`` share.

A tool is scored by the stemmed words a text shares with its name, title, toolset and
description (name words weigh most), each weighted by how rare it is among the tools (idf), with
a few synonyms ("hours" finds tools about minutes of work). Only tools within
:data:`RELATIVE_FLOOR` of the best score count as found.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from fable_core.tools.registry import Registry, Tool

__all__ = ["RELATIVE_FLOOR", "ToolIndex", "words"]

_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = (
    "a an and are as at be by can did do does for from have how i in is it its me my of on or our please "
    "show that the this to up was what when where which who will with would you your about all any")
_STOP = frozenset(_STOPWORDS.split(" "))
# Words people use for what the tools call otherwise (stems, see _stem).
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "hour": ("minute", "time", "work"), "spent": ("time", "work", "log"), "spend": ("time", "work", "log"),
    "remind": ("task", "due"),
    "todo": ("task",), "deadline": ("due", "task"), "write": ("note",), "wrote": ("note",),
    "written": ("note",), "find": ("search",), "look": ("search",), "change": ("update", "edit"),
    "rename": ("update",), "remove": ("delete",), "finish": ("complete",), "done": ("complete",),
    "history": ("version",), "undo": ("restore", "version"), "postpone": ("reschedule", "due"),
    "move": ("reschedule",), "label": ("tag",), "link": ("backlink",), "many": ("total", "count"),
    "much": ("total",), "report": ("total",), "until": ("calculate",), "math": ("calculate",),
    "sum": ("calculate",),
    # what people call events and feed items (issue 40's labelled requests, tests/assistant/data/picking.json)
    "appointment": ("event",), "meeting": ("event",), "dinner": ("event",), "calendar": ("event", "list"),
    "schedule": ("event",), "feed": ("item",), "news": ("feed", "item"),
}
# Arithmetic has no words to match ("what is 17*23?", "15% of 240"): it asks for calculate.
_ARITHMETIC = re.compile(r"\d\s*(?:[-+*/^×÷]|\*\*)\s*[\d(]|\d\s*%|\bpercent|\bsqrt\b")
RELATIVE_FLOOR = 0.35  # a tool sharing words with the message is picked at >= this share of the best score


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def words(text: str) -> dict[str, float]:
    """The stemmed content words of ``text``, each weighing 1; their synonyms weigh half."""
    out: dict[str, float] = {}
    for raw in _WORD.findall(text.lower().replace("_", " ")):
        if raw in _STOP or raw.isdigit():
            continue
        stem = _stem(raw)
        out[stem] = 1.0
        for synonym in _SYNONYMS.get(stem, _SYNONYMS.get(raw, ())):
            out.setdefault(synonym, 0.5)
    if _ARITHMETIC.search(text):
        out["calculate"] = 1.0
    return out




class ToolIndex:
    """The words of every registered tool, indexed once (again when the registry grew)."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._docs: dict[str, Counter[str]] = {}
        self._idf: dict[str, float] = {}

    def rank(self, tools: Sequence[Tool], text: str) -> list[tuple[float, Tool]]:
        """The tools of ``tools`` that ``text`` is about, best first, with their scores."""
        self._index()
        wanted = words(text)
        scored = sorted(((self._score(t.name, wanted), i, t) for i, t in enumerate(tools)), key=lambda x: (-x[0], x[1]))
        floor = max(scored[0][0] * RELATIVE_FLOOR, 1e-9) if scored else 0.0
        return [(score, t) for score, _, t in scored if score >= floor]

    def _index(self) -> None:
        if len(self._docs) == len(self.registry):
            return
        for t in self.registry:
            doc: Counter[str] = Counter()
            for weight, text in ((3, t.name), (2, t.title), (2, t.group), (1, t.description)):
                for w in set(words(text)):
                    doc[w] = max(doc[w], weight)
            self._docs[t.name] = doc
        df: Counter[str] = Counter(w for doc in self._docs.values() for w in doc)
        n = len(self._docs)
        self._idf = {w: math.log(1 + n / c) for w, c in df.items()}

    def _score(self, name: str, wanted: dict[str, float]) -> float:
        doc = self._docs.get(name)
        if doc is None:
            return 0.0
        return sum(self._idf.get(w, 0.0) * doc[w] * weight for w, weight in wanted.items() if w in doc)
