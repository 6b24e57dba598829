"""The agenda's filters and sorts: by status, sorted by priority or title, paged per group with
a count, never capped."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


async def test_groups_filter_by_status_and_sort_by_priority_with_paging(call) -> None:
    for i, priority in enumerate(["low", "high", "none", "medium", "high"]):
        await call("create_note", title=f"Task {i}", status="todo", priority=priority)
    await call("create_note", title="Started", status="in_progress")
    agenda = await call("list_tasks", sort="priority", limit=2)
    (no_date,) = agenda["groups"]
    assert no_date["count"] == 6 and [t["priority"] for t in no_date["items"]] == ["high", "high"]
    rest = await call("list_tasks", sort="priority", limit=2, cursor=no_date["next_cursor"])
    assert [t["priority"] for t in rest["groups"][0]["items"]] == ["medium", "low"]
    started = await call("list_tasks", status="in_progress")
    assert [t["title"] for t in started["groups"][0]["items"]] == ["Started"]
    by_title = await call("list_tasks", sort="title", limit=3)
    assert [t["title"] for t in by_title["groups"][0]["items"]] == ["Started", "Task 0", "Task 1"]


async def test_a_recurring_task_shows_its_next_occurrence(call) -> None:
    due = datetime.now(UTC).date() + timedelta(days=3)
    task = await call("create_note", title="Stretch", due_date=due, recurrence_rule="every 2 days")
    assert task["next_due"] == (due + timedelta(days=2)).isoformat()
    plain = await call("create_note", title="Once", due_date=due)
    assert "next_due" not in plain
