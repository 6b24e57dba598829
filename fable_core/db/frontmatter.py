"""A note's front matter: the ``---`` block of ``key: value`` lines that opens a Markdown file.

Vaults keep their properties there (Obsidian's ``aliases``, ``cssclasses``, a ``status``), and an
import keeps the block at the top of the note's body, where the editor shows it and exports
write it back. Fable reads one thing from it after the import: ``aliases`` (or ``alias``), other
names a ``[[link]]`` may use for the note (``Note.alias_keys``, kept by the model on every
change of the body). The YAML read is the small subset vaults use: ``key: value`` lines,
``[a, b]`` lists and ``- item`` blocks, quoted strings; nested mappings are kept, not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_ALIASES", "Parsed", "aliases", "as_list_plain", "parse_front_matter", "parse_markdown", "without_keys"]

_KEY = re.compile(r"^([A-Za-z_][\w\- ]*):(?:\s+(.*)|)$")
_ITEM = re.compile(r"^\s*-\s+(.*)$")
MAX_ALIASES = 20
"""Aliases a note answers to: more are kept in its text, not read."""
_HEAD = 65_536
"""How much of a body may hold the front matter aliases are read from: the model reads them on
every save, so a 1 MB body is never split into lines for it."""


@dataclass(slots=True)
class Parsed:
    meta: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    problem: str | None = None  # why front matter was not read
    lines: list[str] = field(default_factory=list)  # the block's lines as written, without the ---


def parse_markdown(text: str) -> Parsed:
    """Split ``text`` into front matter and body."""
    text = text.removeprefix("\ufeff")
    if not text.startswith("---"):
        return Parsed(body=text)
    lines = text.split("\n")
    if lines[0].rstrip() != "---":
        return Parsed(body=text)
    for end in range(1, len(lines)):
        if lines[end].rstrip() in ("---", "..."):
            break
    else:
        return Parsed(body=text, problem="front matter is not closed by ---")
    try:
        meta = parse_front_matter(lines[1:end])
    except ValueError as e:
        return Parsed(body=text, problem=f"front matter unreadable ({e})")
    return Parsed(meta=meta, body="\n".join(lines[end + 1:]).lstrip("\n"), lines=lines[1:end])


def parse_front_matter(lines: list[str]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    key: str | None = None
    for number, line in enumerate(lines, 2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = _ITEM.match(line)
        if item and key is not None and isinstance(meta.get(key), list):
            meta[key].append(_scalar(item.group(1)))
            continue
        if line[:1].isspace() and key is not None:
            if isinstance(meta.get(key), list) and not meta[key]:
                raise ValueError(f"line {number}: nested values are not supported")
            continue  # a nested mapping: not a field Fable reads
        match = _KEY.match(line)
        if match is None:
            raise ValueError(f"line {number}: expected 'key: value'")
        key, value = match.group(1).strip().lower(), (match.group(2) or "").strip()
        if not value:
            meta[key] = []
        elif value.startswith("["):
            if not value.endswith("]"):
                raise ValueError(f"line {number}: unclosed [list]")
            meta[key] = [_scalar(v) for v in value[1:-1].split(",") if v.strip()]
        else:
            meta[key] = _scalar(value)
    return meta


def _scalar(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    if value.startswith(("\"", "'")):
        raise ValueError(f"unclosed quote in {value[:40]!r}")
    return re.sub(r"\s+#.*$", "", value)


def as_list_plain(value: Any) -> list[str]:
    """A list value as is (aliases may hold spaces), a single value as one item."""
    if isinstance(value, list):
        return [str(v) for v in value if str(v).strip()]
    return [str(value)] if isinstance(value, str) and value.strip() else []


def aliases(body: str) -> list[str]:
    """The names the front matter of ``body`` gives its note besides its title (none when it has
    no front matter or one that cannot be read)."""
    if not body.startswith("---"):
        return []
    meta = parse_markdown(body[:_HEAD]).meta  # a block closing past it is not read (a problem, no meta)
    found = [a.strip() for a in (*as_list_plain(meta.get("aliases")), *as_list_plain(meta.get("alias")))]
    return [a[:300] for a in found if a][:MAX_ALIASES]


def without_keys(lines: list[str], keys: set[str]) -> list[str]:
    """The block's ``lines`` as written, less the fields named ``keys`` (each with its list items,
    nested lines and comments after it)."""
    kept: list[str] = []
    dropping = False
    for line in lines:
        match = _KEY.match(line) if line[:1] not in (" ", "\t", "-", "#") else None
        if match is not None:
            dropping = match.group(1).strip().lower() in keys
        if not dropping:
            kept.append(line)
    return kept
