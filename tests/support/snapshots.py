"""Snapshots: files a test compares with what the code produces now, rewritten on request.

A snapshot is a whole file (``tests/*/snapshots/*.json``) or one generated section of a
document (the settings table of docs/configuration.md). When it differs, or is missing, the test
fails with a diff and the command that rewrites it; run with that environment variable set (to
anything but ``0``), the test writes what the code produces instead, and passes.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from pathlib import Path
from typing import Any

__all__ = ["assert_json_matches", "assert_matches", "updating"]

ROOT = Path(__file__).resolve().parents[2]
DIFF_LINES = 60


def updating(env_var: str) -> bool:
    """Whether this run rewrites the snapshots ``env_var`` governs."""
    return os.environ.get(env_var, "") not in ("", "0")


def assert_matches(path: Path, current: str, *, env_var: str, command: str, what: str,
                   section: str | None = None, as_json: bool = False) -> None:
    """``path`` holds ``current``, or the test fails saying to run ``env_var=1 command``.

    ``section``, a regular expression (multi-line), picks the part of ``path`` that is the
    snapshot; the rest of the file is left alone. ``as_json`` compares parsed JSON, so the
    formatting of the file does not matter. ``what`` names what changed, for the message."""
    name = _shown(path)
    rewrite = f"{env_var}=1 {command}"
    whole = path.read_text() if path.exists() else None
    stored = whole
    if section is not None:
        found = re.search(section, whole or "", re.MULTILINE)
        if found is None:  # the document's own job, not the snapshot's: never created here
            raise AssertionError(f"{name} has no section matching {section!r}")
        stored = found.group(0)
    if updating(env_var):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(current if whole is None or stored is None else whole.replace(stored, current))
        return
    if stored is None:
        raise AssertionError(f"no {name} yet: create it with {rewrite} and review it")
    if as_json:
        stored, current = _canonical(json.loads(stored)), _canonical(json.loads(current))
    if stored != current:
        diff = list(difflib.unified_diff(stored.splitlines(), current.splitlines(),
                                         f"{name} (stored)", f"{name} (now)", lineterm=""))
        if len(diff) > DIFF_LINES:
            diff = [*diff[:DIFF_LINES], f"... {len(diff) - DIFF_LINES} more lines of diff"]
        raise AssertionError(f"{what} changed: {name} differs from what the code now gives. If on purpose, "
                             f"run {rewrite} and review the diff:\n" + "\n".join(diff))


def assert_json_matches(path: Path, data: Any, **kwargs: Any) -> None:
    """:func:`assert_matches` for JSON data, stored indented with sorted keys."""
    assert_matches(path, _canonical(data), as_json=True, **kwargs)


def _canonical(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)
