"""The morning prep's scheduler: each user's prep at their ``prep_time``, in their zone, on their
days, run by APScheduler in every process that runs jobs (``fable serve``).

**Plans.** A user's plan is read from their ``journal`` setting (time, days, its own time zone)
and their ``timezone`` setting (the zone when the journal names none): one cron job per user
(``prep:<user id>``, ``CronTrigger(day_of_week, hour, minute, timezone=zone)``). A user whose
``days`` is empty is never prepared; a deactivated user neither.

**Live changes.** Every settings change is announced on PostgreSQL's ``fable_settings``
channel when it commits (:mod:`fable_core.people.preferences.store`): each process listening replans
that user at once (this one included, through the same notice). Every :data:`REREAD` seconds
all plans are read again, so a notice lost with a connection (or a new user) is caught up.

**Catch-up.** When the listener connects (at start, and again after losing its connection),
every plan is read and each user whose prep time has passed today (their today, in their zone,
on one of their days) and whose day is not prepared yet is prepared at once: a prep missed while
Fable was down runs once, if its day is not over. Yesterday's missed prep is not made.

**Exactly once.** Several processes fire the same prep at the same minute; each run claims the
day's ``journal_days`` row (:mod:`.prep`): one prepares, the others find it ``preparing`` or
``done`` and leave it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from pydantic import ValidationError
from sqlalchemy import select

from fable_core.daily.journal.prep import prepare, user_caller
from fable_core.db.listener import Listener
from fable_core.db.models import Setting, User
from fable_core.people.preferences.journal import JOURNAL, JournalPrefs
from fable_core.people.preferences.store import CHANNEL
from fable_core.tools.access import of_user
from fable_core.tools.clock import TIMEZONE, check_zone

if TYPE_CHECKING:
    from fable_core.tools.runtime import Closer, Runtime

__all__ = ["REREAD", "Plan", "PrepScheduler", "install", "read_plans"]

_log = logging.getLogger(__name__)
REREAD = 300.0
_KEYS = frozenset({JOURNAL.name, TIMEZONE.name})
_WEEK = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(frozen=True, slots=True)
class Plan:
    """When a user's day is prepared."""

    user_id: int
    zone: ZoneInfo
    at: time
    days: tuple[str, ...]

    def trigger(self) -> CronTrigger:
        return CronTrigger(day_of_week=",".join(self.days), hour=self.at.hour, minute=self.at.minute,
                           timezone=self.zone)

    def missed(self, now: datetime) -> date | None:
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


class PrepScheduler:
    """Each user's prep on their schedule, replanned live, in this process."""

    def __init__(self, fable: Runtime, *, reread: float = REREAD) -> None:
        self._fable = fable
        self._reread = reread
        self._timer = AsyncIOScheduler(timezone=UTC)
        self._plans: dict[int, Plan] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        self.listener = Listener(fable.db.url, {CHANNEL: self._heard})

    def start(self) -> None:
        self._timer.add_job(self.replan, IntervalTrigger(seconds=self._reread, timezone=UTC), id="journal:reread",
                            max_instances=1, coalesce=True)
        self._timer.start()
        self.listener.start()  # on connecting it replans everyone and catches up (see _heard)

    def _heard(self, payload: str | None) -> None:
        if payload is None:
            self._spawn(self.replan(catch_up=True))
            return
        user, _, key = payload.partition(" ")
        if key in _KEYS and user.isdigit():
            self._spawn(self.replan(int(user)))

    def _spawn(self, work: Any) -> None:
        if self._closed:
            work.close()
            return
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def replan(self, only: int | None = None, *, catch_up: bool = False) -> None:
        """Read the plans (everyone's, or user ``only``'s) and schedule them; with ``catch_up``,
        prepare at once each day whose prep time passed today unprepared."""
        try:
            plans = await read_plans(self._fable, only)
        except Exception:  # noqa: BLE001 - the database is down: the next notice or reread replans
            _log.warning("could not read the journal schedules", exc_info=True)
            return
        gone = (set(self._plans) if only is None else {only}) - {p.user_id for p in plans}
        for uid in gone:
            self._plans.pop(uid, None)
            if self._timer.get_job(f"prep:{uid}") is not None:
                self._timer.remove_job(f"prep:{uid}")
        for plan in plans:
            if self._plans.get(plan.user_id) != plan or self._timer.get_job(f"prep:{plan.user_id}") is None:
                self._plans[plan.user_id] = plan
                self._timer.add_job(self._fire, plan.trigger(), args=[plan.user_id], id=f"prep:{plan.user_id}",
                                    replace_existing=True, max_instances=1, coalesce=True, misfire_grace_time=3600)
        if catch_up:
            now = datetime.now(UTC)
            for plan in plans:
                day = plan.missed(now)
                if day is not None:
                    self._spawn(self.run(plan.user_id, day))

    async def _fire(self, user_id: int) -> None:
        plan = self._plans.get(user_id)
        if plan is not None:
            self._spawn(self.run(user_id, datetime.now(UTC).astimezone(plan.zone).date()))

    async def run(self, user_id: int, day: date) -> None:
        """Prepare ``day`` for ``user_id`` unless it is (being) prepared; failures are logged."""
        try:
            async with self._fable.db.reading() as session:
                caller = await user_caller(session, user_id)
            done = await prepare(self._fable, caller, day, manual=False)
            if done is not None:
                _log.info("prepared the journal of user %s for %s", user_id, day)
        except Exception:  # noqa: BLE001 - logged; "prepare now" or tomorrow tries again
            _log.exception("the morning prep of user %s for %s failed", user_id, day)

    def next_run(self, user_id: int) -> datetime | None:
        """When ``user_id``'s next prep is due here (None: not scheduled)."""
        found = self._timer.get_job(f"prep:{user_id}")
        return None if found is None else found.next_run_time

    def fire_now(self, user_id: int) -> None:
        """Have APScheduler run ``user_id``'s scheduled prep now (tests, and an operator)."""
        self._timer.modify_job(f"prep:{user_id}", next_run_time=datetime.now(UTC))

    async def idle(self) -> None:
        """Until no prep or replan started here is running (tests)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        self._closed = True
        if self._timer.running:
            self._timer.shutdown(wait=False)
        await self.listener.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def install(fable: Runtime) -> Closer | None:
    """The journal capability's hook: the prep scheduler, in a process opened to run jobs."""
    if not fable.runs_jobs:
        return None
    scheduler = PrepScheduler(fable)
    scheduler.start()
    return scheduler.close
