"""Backup fixtures: a rich world of alice's and bob's."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy import select, update

from fable_core.db.models import Conversation, Message, Note
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

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
    event = await call("create_event", title="Weekly", start="2026-03-02T09:00:00", rrule="FREQ=WEEKLY;COUNT=3")
    await call("update_event", event_id=event["id"], occurrence="2026-03-09T09:00:00", title="Moved")
    await call("record_moment", text="First tomato")
    async with fable.db.transaction() as session:  # a child whose parent comes later; a message
        later = await call("create_note", title="Parent", body="Holds Compost.")
        await session.execute(update(Note).where(Note.id == target["id"]).values(parent_id=later["id"]))
        conversation = (await session.execute(select(Conversation.id))).scalar_one()
        session.add(Message(conversation_id=conversation, user_id=alice.user_id, role="user", content="Hello",
                            tool_events=[{"name": "update_note", "arguments": {"note_id": source["id"]},
                                          "result": {"project_id": project["id"], "deleted": False}, "ok": True}],
                            context={"used": [{"id": target["id"], "title": "Compost"}], "urls": []}))
    await call("create_note", title="Bob's", body="Mine.", as_=bob)
    await call("set_setting", key="assistant_name", value="Bo", as_=bob)
    return {"project": project, "source": source, "target": target, "group": group}
