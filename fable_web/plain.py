"""Error messages for people: what the HTTP API says, without the tool calls agents are told.

Core errors are written for agents and may end in a hint naming a tool or its arguments ("update
it with update_note (note_id=12)"). People read the HTTP answer (the web UI shows its message),
so :func:`for_people` takes those hints out of the message, in one place for every error: a
clause (between "; ") naming a registered tool (one with an underscore in its name: "share" is
also a word) or an argument as code (``name=value``) goes, and so does such a parenthesis.
Quoted text (a title) is never read as code. The whole message stays as ``details.hint``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["for_people"]

_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_ASSIGNMENT = re.compile(r"\b[a-z][a-z0-9_]*=")
_PARENTHESIS = re.compile(r"\s*\([^()]*\)")
_INVALID_FOR = re.compile(r"^invalid arguments for [a-z][a-z0-9_]*: ")


def _technical(text: str, tools: frozenset[str]) -> bool:
    bare = _QUOTED.sub("", text)
    return bool(_ASSIGNMENT.search(bare)) or any(word in tools for word in re.findall(r"[a-z][a-z0-9_]*", bare))


def for_people(message: str, tools: Iterable[str]) -> tuple[str, str | None]:
    """``message`` without the clauses and parentheses that name a tool or an argument, and the
    original message as a hint when anything was taken out (None when nothing was)."""
    names = frozenset(name for name in tools if "_" in name)  # "share", "research": words too
    text = _INVALID_FOR.sub("invalid input: ", message)
    text = _PARENTHESIS.sub(lambda m: "" if _technical(m.group(), names) else m.group(), text)
    kept = [clause for clause in text.split("; ") if not _technical(clause, names)]
    plain = "; ".join(kept).strip()
    if not plain:
        return message, None
    return (plain, message) if plain != message else (message, None)
