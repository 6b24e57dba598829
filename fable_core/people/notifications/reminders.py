"""Due-task reminders: the ``due_reminders`` job.

Every :data:`EVERY` seconds, each user gets one notification per open task (``todo`` or
``in_progress``) due today *where they live* (their ``timezone`` setting, else UTC; see
:mod:`fable_core.tools.clock`), from :data:`FROM_HOUR` o'clock their time on: a reminder
at midnight would wake nobody usefully. A task made later that day, due that day, is reminded
at the next run. A task assigned to someone reminds them instead of its owner (on the owner's
date). The key ``due:<note id>:<date>`` makes each reminder once-only, so replicas
racing (or a run repeated) insert one row.

Users are grouped by their local date, so a run is at most three statements (the world spans
two or three dates at any instant) plus one read of the time zone settings, whatever the number
of users: each ``INSERT ... SELECT`` picks the open tasks due that date of the users on it.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import ColumnElement, String, any_, cast, func, literal, select, true
from sqlalchemy.dialects.postgresql import array
from sqlalchemy.dialects.postgresql import insert as pg_insert

from fable_core.db.database import Database, rowcount
from fable_core.db.models import Note, Notification, Setting
from fable_core.people.notifications.notify import announce
from fable_core.tools.access import of_user
from fable_core.tools.clock import TIMEZONE
from fable_core.tools.jobs import job

if TYPE_CHECKING:
    from fable_core.tools.runtime import Runtime

__all__ = ["EVERY", "FROM_HOUR", "OPEN", "remind_due"]

EVERY = 600.0
FROM_HOUR = 8
OPEN = ("todo", "in_progress")


@job(every=EVERY)
async def due_reminders(fable: Runtime) -> None:
    """Tell each user of their open tasks due today, in their time zone."""
    await remind_due(fable.db)


async def remind_due(db: Database, now: datetime | None = None) -> int:
    """Add today's reminders as of ``now`` (default: now); returns how many were new."""
    now = now or datetime.now(UTC)
    async with db.transaction() as session:
        zones = (await session.execute(
            select(Setting.user_id, Setting.value).where(Setting.key == TIMEZONE.name))).all()
        local = {user_id: now.astimezone(_zone(value)) for user_id, value in zones}
        utc_due = now.hour >= FROM_HOUR
        on_day: dict[date, list[int]] = defaultdict(list)
        for user_id, at in local.items():
            if at.hour >= FROM_HOUR:
                on_day[at.date()].append(user_id)
        added = 0
        for day in sorted(set(on_day) | ({now.date()} if utc_due else set())):
            users = on_day.get(day, [])
            if day == now.date() and utc_due:  # those on UTC, and everyone whose zone agrees today
                elsewhere = sorted(set(local) - set(users))  # a zone on another date, or before 8 there
                who = ~of_user(Note, any_(array(elsewhere))) if elsewhere else true()
            else:
                who = of_user(Note, any_(array(users)))
            added += await _remind(session, day, who)
        if added:
            await announce(session)
    return added


async def _remind(session: Any, day: date, who: ColumnElement[bool]) -> int:
    key = func.concat("due:", cast(Note.id, String), ":", day.isoformat())
    # an assigned task reminds its assignee (on its owner's day), not its owner
    tasks = select(func.coalesce(Note.assignee_id, Note.user_id), literal("due"),
                   func.concat("Due today: ", func.left(Note.title, 280)),
                   func.jsonb_build_object("note_id", Note.id), key).where(
        Note.status.in_(OPEN), Note.due_date == day, who)
    statement = pg_insert(Notification).from_select(["user_id", "kind", "title", "data", "key"], tasks)
    result = await session.execute(statement.on_conflict_do_nothing(
        index_elements=["user_id", "key"], index_where=Notification.key.is_not(None)))
    return rowcount(result)


def _zone(value: Any) -> ZoneInfo:
    """The setting's zone; UTC for a value that is not one (as :mod:`~fable_core.tools.clock` does)."""
    if isinstance(value, str) and value.strip():
        try:
            return ZoneInfo(value.strip())
        except (ZoneInfoNotFoundError, ValueError):
            pass
    return ZoneInfo("UTC")
