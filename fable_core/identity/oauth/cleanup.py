"""The ``prune_oauth`` job, hourly: codes and tokens past use are deleted.

A code is kept an hour past its expiry (a replay within it still revokes what the code gave),
a token a day past its expiry (a reused refresh token within it still revokes its family);
after that, either is refused as unknown, which is as good. Each batch of :data:`BATCH` rows
is its own short transaction.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from fable_core.db.database import Database, delete_in_batches
from fable_core.db.models import OAuthCode, OAuthToken
from fable_core.tools.jobs import job

if TYPE_CHECKING:
    from fable_core.tools.runtime import Runtime

__all__ = ["BATCH", "prune"]

BATCH = 5000
CODE_GRACE = timedelta(hours=1)
TOKEN_GRACE = timedelta(days=1)


@job(cron="17 * * * *")
async def prune_oauth(fable: Runtime) -> None:
    """Delete OAuth codes and tokens long past their expiry."""
    await prune(fable.db)


async def prune(db: Database, now: datetime | None = None, batch: int = BATCH) -> dict[str, int]:
    """Delete what is past its grace as of ``now``; how many codes and tokens."""
    now = now or datetime.now(UTC)
    deleted: dict[str, int] = {}
    for name, model, grace in (("codes", OAuthCode, CODE_GRACE), ("tokens", OAuthToken, TOKEN_GRACE)):
        deleted[name] = await delete_in_batches(db, model, model.expires_at < now - grace, batch=batch)
    return deleted
