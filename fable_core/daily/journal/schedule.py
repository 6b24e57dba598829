"""The morning prep's schedule: a background job (:mod:`fable_core.tools.jobs`) that, every
minute, prepares the journal days that are due.

**Due.** A user's plan is read from their ``journal`` setting (time, days, its own time zone)
and their ``timezone`` setting (the zone when the journal names none), for every active user,
at every run: a settings change takes effect at the next minute, in every process, with nothing
to replan. A user's day is due when it is one of their days and their prep time has passed
today (their today, in their zone), and its ``journal_days`` row is missing or claimable
(:func:`~fable_core.daily.journal.prep.claimable`: never claimed, given back, its claim's lease
over, or failed and due again). A day done (by this job or by hand, with ``prepare_journal``)
or skipped is never prepared again; yesterday's missed prep is not made: that day is over. A
prep missed while no ``fable serve`` ran is made at the next run, if its day is not over.

**Once.** The job runs in processes that run jobs (``fable serve``), one run at a time across
replicas (its advisory lock); each day is still claimed on its row (:mod:`.prep`), since
"Prepare now" may run anywhere. The run prepares :data:`AT_ONCE` days at a time (each a model
call, within the user's share of the model).

**Retries.** A claim whose holder died (killed, or cut off from the database past its lease) is
taken over once its lease is over; a failed day is tried again after a backoff; after
:data:`~fable_core.daily.journal.prep.MAX_ATTEMPTS` attempts it stays ``failed``, saying why.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from pydantic import ValidationError
from sqlalchemy import select

from fable_core.daily.journal.prep import claimable, prepare, user_caller
from fable_core.db.models import JournalDay, Setting, User
from fable_core.people.preferences.journal import JOURNAL, JournalPrefs
from fable_core.tools.access import of_user
from fable_core.tools.clock import TIMEZONE, check_zone
from fable_core.tools.jobs import job

if TYPE_CHECKING:
    from fable_core.tools.runtime import Runtime

__all__ = ["AT_ONCE", "EVERY", "Plan", "due_days", "prepare_due", "prepare_due_journals", "read_plans"]

_log = logging.getLogger(__name__)
EVERY = 60.0  # seconds between runs: a prep comes within a minute of its time
AT_ONCE = 4  # days one run prepares at a time
_KEYS = frozenset({JOURNAL.name, TIMEZONE.name})
_WEEK = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(frozen=True, slots=True)
class Plan:
    """When a user's day is prepared."""

    user_id: int
    zone: ZoneInfo
    at: time
    days: tuple[str, ...]

    def due(self, now: datetime) -> date | None:
        """Today (in the user's zone) when its prep time has passed on one of their days."""
        local = now.astimezone(self.zone)
        due = _WEEK[local.weekday()] in self.days and local.time() >= self.at
        return local.date() if due else None


async def read_plans(fable: Runtime, only: int | None = None) -> list[Plan]:
    """Every active user's plan (or user ``only``'s), from their settings in two queries."""
    users = select(User.id).where(User.is_active)
    stored = select(Setting.user_id, Setting.key, Setting.value).where(Setting.key.in_(_KEYS))
    if only is not None:
        users, stored = users.where(User.id == only), stored.where(of_user(Setting, only))
    async with fable.db.reading() as session:
        ids = list((await session.execute(users)).scalars())
        values: dict[int, dict[str, Any]] = {}
        for uid, key, value in (await session.execute(stored)).all():
            values.setdefault(uid, {})[key] = value
    plans = []
    for uid in ids:
        prefs = _prefs(values.get(uid, {}).get(JOURNAL.name))
        if prefs.days:
            zone = prefs.timezone or _zone(values.get(uid, {}).get(TIMEZONE.name))
            plans.append(Plan(uid, ZoneInfo(zone), prefs.prep_time.replace(second=0, microsecond=0), tuple(prefs.days)))
    return plans


def _prefs(value: Any) -> JournalPrefs:
    try:
        return JOURNAL.default if value is None else JOURNAL.adapter.validate_python(value)
    except ValidationError:  # a value an older Fable accepted reads as the default, as everywhere
        return JOURNAL.default


def _zone(value: Any) -> str:
    try:
        return check_zone(value) if isinstance(value, str) else "UTC"
    except ValueError:
        return "UTC"


async def due_days(fable: Runtime, now: datetime) -> list[tuple[int, date]]:
    """The (user, day) pairs due at ``now``: the plans' todays whose rows are missing or
    claimable, in user order. One query for the rows (a day or two of them: zones differ)."""
    wanted = {plan.user_id: day for plan in await read_plans(fable) if (day := plan.due(now)) is not None}
    if not wanted:
        return []
    async with fable.db.reading() as session:
        rows = (await session.execute(select(JournalDay).where(JournalDay.day.in_(set(wanted.values()))))).scalars()
        settled = {row.user_id for row in rows if wanted.get(row.user_id) == row.day and not claimable(row, now)}
    return sorted((uid, day) for uid, day in wanted.items() if uid not in settled)


async def prepare_due(fable: Runtime, now: datetime) -> int:
    """Prepare the days due at ``now`` (:data:`AT_ONCE` at a time); how many were prepared. One
    that fails is logged (and marked ``failed`` by :func:`~.prep.prepare`); the others go on."""
    slots = asyncio.Semaphore(AT_ONCE)

    async def one(user_id: int, day: date) -> bool:
        async with slots:
            try:
                async with fable.db.reading() as session:
                    caller = await user_caller(session, user_id)
                done = await prepare(fable, caller, day, manual=False, now=now)
            except Exception:  # noqa: BLE001 - logged; the day is retried after its backoff
                _log.exception("the morning prep of user %s for %s failed", user_id, day)
                return False
            if done is not None:
                _log.info("prepared the journal of user %s for %s", user_id, day)
            return done is not None

    return sum(await asyncio.gather(*(one(uid, day) for uid, day in await due_days(fable, now))))


@job(every=EVERY)
async def prepare_due_journals(fable: Runtime) -> None:
    """Prepare every journal day that is due now (see the module's docstring)."""
    await prepare_due(fable, datetime.now(UTC))
