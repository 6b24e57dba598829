"""Snapshot files under tests/mcp/snapshots: compared by tests, rewritten with UPDATE_SNAPSHOTS=1."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

SNAPSHOTS = Path(__file__).parent / "snapshots"


def assert_snapshot(name: str, data: Any) -> None:
    """Compare ``data`` with snapshots/NAME.json; UPDATE_SNAPSHOTS=1 writes it instead."""
    path = SNAPSHOTS / f"{name}.json"
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1" or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if os.environ.get("UPDATE_SNAPSHOTS") != "1":
            raise AssertionError(f"snapshot {path.name} did not exist; written, re-run to compare")
        return
    assert json.loads(path.read_text()) == json.loads(text), (
        f"{path.name} differs from what clients receive; if the change is intended, regenerate with "
        "UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/mcp"
    )
