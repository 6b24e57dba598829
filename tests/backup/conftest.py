"""Backup fixtures: a rich world of alice's and bob's."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from fable_core.caller import Caller
from fable_core.runtime import Fable

Call = Callable[..., Awaitable[dict[str, Any]]]


@pytest.fixture
async def world(fable: Fable, call: Call, alice: Caller, bob: Caller) -> dict[str, Any]:
    """Notes with versions and links, a project with a milestone, logged work, a conversation,
    a group, shares, a recurring event and settings."""
    project = await call("create_project", title="Garden", description="Beds and paths")
    await call("create_milestone", title="Spring", project_id=project["id"])
    target = await call("create_note", title="Compost", body="Brown and green.")
    source = await call("create_note", title="Plan", body="See [[Compost]] and [[Later]].", tags=["garden"],
                        status="todo")
    await call("update_note", note_id=source["id"], body="See [[Compost]], [[Later]] and more.")
    await call("create_note", title="Later", body="Resolved link.")
    await call("log_work", note_id=source["id"], minutes=30, description="digging")
    await call("create_conversation", title="Ideas")
    await call("set_setting", key="assistant_name", value="Sage")
    group = await fable.call("create_group", {"name": "Gardeners"}, alice)
    await call("share", note_id=target["id"], with_user="bob", permission="viewer")
    await call("create_event", title="Weekly", start="2026-03-02T09:00:00", rrule="FREQ=WEEKLY;COUNT=3")
    await call("create_note", title="Bob's", body="Mine.", as_=bob)
    await call("set_setting", key="assistant_name", value="Bo", as_=bob)
    return {"project": project, "source": source, "target": target, "group": group}
