"""The hourly ``prune_logs`` job deletes only rows past their category's keeping time, in batches."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import insert
from support.logs import Rows

from fable_core.admin.logs.retention import prune
from fable_core.db.models import AppLog
from fable_core.runtime import Fable
from fable_core.tools.jobs import JOBS, run_job


async def test_each_category_keeps_its_own_days(fable: Fable, log_rows: Rows) -> None:
    now = datetime.now(UTC)
    keep = {"audit": 365, "request": 14, "error": 30, "usage": 90}
    rows = []
    for category, days in keep.items():
        for age, label in ((days + 1, "old"), (days - 1, "young")):
            rows.append({"category": category, "action": f"{category}.{label}",
                         "created_at": now - timedelta(days=age)})
    async with fable.db.transaction() as s:
        await s.execute(insert(AppLog), rows)
    assert "prune_logs" in JOBS and JOBS["prune_logs"].cron
    assert await run_job(fable, "prune_logs")
    assert sorted(r.action for r in await log_rows()) == sorted(f"{c}.young" for c in keep)


async def test_a_backlog_goes_in_batches_and_settings_decide(fable: Fable, log_rows: Rows) -> None:
    now = datetime.now(UTC)
    async with fable.db.transaction() as s:
        await s.execute(insert(AppLog), [{"category": "request", "action": "r", "created_at": now - timedelta(days=3)}
                                         for _ in range(7)])
    assert (await prune(fable.db, fable.settings, now=now, batch=3))["request"] == 0
    shorter = fable.settings.model_copy(update={"fable_log_retention_request_days": 2})
    assert await prune(fable.db, shorter, now=now, batch=3) == {"audit": 0, "request": 7, "error": 0, "usage": 0}
    assert await log_rows() == []
