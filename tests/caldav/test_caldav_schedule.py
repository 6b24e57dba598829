"""The sync on its schedule (the ``sync_calendars`` job), and a dead server that holds one
user's sync while another user's goes through."""

from __future__ import annotations

import asyncio
import socket
import time
from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import update
from support.caldav_server import Radicale

from fable_core.daily.caldav.sync import sync_account
from fable_core.daily.calendar.service import EventFields, create_event
from fable_core.db.models import CaldavAccount
from fable_core.errors import Unavailable
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.jobs import run_job


async def _connect(fable: Fable, caller: Caller, radicale: Radicale, user: str) -> None:
    await fable.call("connect_caldav", {"url": radicale.url, "username": user, "password": radicale.users[user]},
                     caller)


async def _event(fable: Fable, caller: Caller, title: str) -> None:
    async with fable.db.transaction() as session:
        await create_event(session, caller, EventFields(title=title, start=date(2026, 4, 1)))


async def test_the_job_syncs_the_accounts_that_are_due_and_schedules_the_next(
        sync_fable: Fable, radicale: Radicale, alice: Caller, bob: Caller) -> None:
    await _connect(sync_fable, alice, radicale, "ana")
    await _connect(sync_fable, bob, radicale, "ben")
    await _event(sync_fable, alice, "Alice's")
    await _event(sync_fable, bob, "Bob's")
    async with sync_fable.db.transaction() as session:  # bob's next sync is later
        await session.execute(update(CaldavAccount).where(CaldavAccount.user_id == bob.user_id)
                              .values(next_attempt_at=datetime.now(UTC) + timedelta(minutes=10)))
    assert await run_job(sync_fable, "sync_calendars")
    assert [o.icalendar_component["summary"] for o in radicale.calendar("ana").events()] == ["Alice's"]
    assert radicale.calendar("ben").events() == []
    status = await sync_fable.call("get_caldav_status", {}, alice)
    wait = datetime.fromisoformat(status["next_attempt_at"]) - datetime.now(UTC)
    interval = timedelta(seconds=sync_fable.settings.fable_caldav_sync_interval)
    assert interval - timedelta(minutes=1) < wait <= interval


class _BlackHole:
    """A TCP port that accepts connections and never answers, until closed."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.host = f"127.0.0.1:{self.sock.getsockname()[1]}"

    def close(self) -> None:
        self.sock.close()


@pytest.mark.slow
async def test_a_dead_server_holds_only_its_own_users_sync(
        fable: Fable, radicale: Radicale, alice: Caller, bob: Caller) -> None:
    hole = _BlackHole()
    local = Fable(fable.settings.model_copy(update={"fable_caldav_allow_hosts": [radicale.host, hole.host]}),
                  fable.db)
    await _connect(local, bob, radicale, "ben")
    await _connect(local, alice, radicale, "ana")
    async with local.db.transaction() as session:  # alice's server dies: it now points at the black hole
        await session.execute(update(CaldavAccount).where(CaldavAccount.user_id == alice.user_id)
                              .values(url=f"http://{hole.host}/"))
    stuck = asyncio.create_task(sync_account(local, alice.user_id))
    await asyncio.sleep(0.3)
    started = time.monotonic()
    await _event(local, bob, "Bob's")
    result = await local.call("sync_calendar", {}, bob)
    assert result["pushed"] == 1 and time.monotonic() - started < 3
    assert not stuck.done()
    hole.close()  # its backlog is reset: the stuck request fails now, not at the timeout
    with pytest.raises(Unavailable):
        await asyncio.wait_for(stuck, 15)
