""""Did you mean": the names closest to one a caller got wrong (a tool, an argument).

An agent that calls ``create_notes`` or passes ``titel`` should learn the right name from the
error itself, not from another ``tools/list``. Closeness is difflib's ratio (at least 0.65, and
within 0.08 of the closest, so one clear match comes alone), raised for the same words in
another order (``note_create``: ``create_note``) and for a prefix either way (``search``:
``search_notes``, ``project_name``: ``project``). Pure functions over the names a caller may
use; the dispatcher (:mod:`.dispatcher`) puts their answer into its errors, so every surface
gets it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fable_core.errors import UnknownTool

__all__ = ["argument_hint", "closest", "fields_at", "hint", "unknown_tool"]

CUTOFF = 0.65
MARGIN = 0.08
LONGEST = 100  # difflib's work grows with both lengths: a longer "name" is no typo of ours


def closest(name: str, names: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` of ``names`` close to ``name``, closest first; ``[]`` when none is."""
    if len(name) > LONGEST:
        return []
    pool = [x for x in dict.fromkeys(names) if x != name]
    wanted = name.casefold()
    words = sorted(wanted.replace("-", "_").split("_"))
    scored: dict[str, float] = {}
    for candidate in pool:
        folded = candidate.casefold()
        score = difflib.SequenceMatcher(None, wanted, folded).ratio()
        if sorted(folded.split("_")) == words:
            score = max(score, 0.95)
        elif min(len(wanted), len(folded)) >= 3 and (folded.startswith(wanted) or wanted.startswith(folded)):
            score = max(score, 0.75)
        if score >= CUTOFF:
            scored[candidate] = score
    best = max(scored.values(), default=0.0)
    return sorted((c for c in scored if scored[c] >= best - MARGIN), key=lambda c: (-scored[c], c))[:n]


def hint(matches: Sequence[str]) -> str:
    """``did you mean `a` or `b`?``, or ``""`` for no matches."""
    if not matches:
        return ""
    quoted = [f"`{m}`" for m in matches]
    listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return f"did you mean {listed}?"


def unknown_tool(name: str, usable: Iterable[str], where: str = "") -> UnknownTool:
    """The error for a tool ``name`` that is not among ``usable`` (the tools the caller may
    run), naming the close ones: ``no tool named 'create_notes'; did you mean `create_note`?``."""
    matches = closest(name, usable)
    if not matches:
        return UnknownTool(f"no tool named {name!r}{where}", name=name)
    return UnknownTool(f"no tool named {name!r}{where}; {hint(matches)}", name=name, did_you_mean=matches)


def fields_at(schema: Mapping[str, Any], path: Sequence[str | int]) -> list[str]:
    """The property names of the object at ``path`` inside a JSON Schema (a list index steps
    into ``items``), or ``[]`` when the schema does not say."""
    node: Any = schema
    for step in path:
        if not isinstance(node, Mapping):
            return []
        node = node.get("items") if isinstance(step, int) else node.get("properties", {}).get(step)
    if not isinstance(node, Mapping):
        return []
    return list(node.get("properties", {}))


def argument_hint(schema: Mapping[str, Any], loc: Sequence[str | int]) -> tuple[list[str], str]:
    """For an argument the schema does not have (``loc`` its path): the close names and the
    words to add to the error, `` (did you mean `title`?)`` or, with none close, the names
    there are (`` (expected one of: note_id, limit)``)."""
    names = fields_at(schema, loc[:-1]) if loc else []
    if not names:
        return [], ""
    matches = closest(str(loc[-1]), names)
    return matches, f" ({hint(matches) or 'expected one of: ' + ', '.join(names)})"
