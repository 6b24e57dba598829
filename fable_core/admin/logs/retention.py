"""How long app logs are kept: the ``prune_logs`` job, hourly, days per category from settings
(``FABLE_LOG_RETENTION_<CATEGORY>_DAYS``).

One process runs it at a time (jobs are claimed by advisory lock across replicas). It deletes in
batches of :data:`BATCH` rows, each its own short transaction, so a large backlog (the first run
after lowering a setting) never holds a long lock or a huge transaction.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from fable_core.config import Settings
from fable_core.db.database import Database, delete_in_batches
from fable_core.db.models import AppLog
from fable_core.infra.rate_limits import prune_stale_hits
from fable_core.tools.idempotency import forget_old_keys
from fable_core.tools.jobs import job

if TYPE_CHECKING:
    from fable_core.tools.runtime import Runtime

__all__ = ["BATCH", "keep_days", "prune", "prune_idempotent_calls", "prune_rate_limits"]

BATCH = 5000


def keep_days(settings: Settings) -> dict[str, int]:
    """Days each category is kept."""
    return {"audit": settings.fable_log_retention_audit_days,
            "request": settings.fable_log_retention_request_days,
            "error": settings.fable_log_retention_error_days,
            "usage": settings.fable_log_retention_usage_days}


@job(cron="41 * * * *")
async def prune_logs(fable: Runtime) -> None:
    """Delete app log rows past their category's keeping time."""
    await prune(fable.db, fable.settings)


async def prune(db: Database, settings: Settings, now: datetime | None = None, batch: int = BATCH) -> dict[str, int]:
    """Delete what is past its keeping time as of ``now``; how many rows of each category."""
    now = now or datetime.now(UTC)
    deleted: dict[str, int] = {}
    for category, days in keep_days(settings).items():
        cutoff = now - timedelta(days=days)
        deleted[category] = await delete_in_batches(db, AppLog, AppLog.category == category,
                                                    AppLog.created_at < cutoff, batch=batch)
    return deleted


@job(cron="17 * * * *")
async def prune_idempotent_calls(fable: Runtime) -> None:
    """Forget idempotency keys older than two days (:mod:`fable_core.tools.idempotency`)."""
    await forget_old_keys(fable.db)


@job(cron="23 * * * *")
async def prune_rate_limits(fable: Runtime) -> None:
    """Delete rate-limit hits no window counts any more: those of buckets nobody hit again."""
    await prune_stale_hits(fable.db)
