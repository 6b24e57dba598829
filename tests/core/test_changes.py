"""ChangeFeed: committed events told to the other Fable processes on the database, not to their own."""

from __future__ import annotations

import asyncio

from sqlalchemy import func, select
from support.pace import scaled

from fable_core.infra.changes import CHANNEL, ChangeFeed
from fable_core.infra.events import Event, EventBus, NoteChanged, ProjectChanged
from fable_core.runtime import Fable


async def test_another_process_hears_the_changes_and_the_origin_does_not(fable: Fable) -> None:
    """Two feeds on one database stand for two processes."""
    here_bus, there_bus = EventBus(), EventBus()
    here, there = ChangeFeed(fable.db, here_bus), ChangeFeed(fable.db, there_bus)
    heard_here: list[Event] = []
    heard_there: list[Event] = []
    all_arrived = asyncio.Event()

    def on_there(event: Event) -> None:
        heard_there.append(event)
        if len(heard_there) == 401:
            all_arrived.set()

    here.subscribe(heard_here.append)
    there.subscribe(on_there)
    try:
        async with asyncio.timeout(scaled(10)):
            await here.listening.wait()
            await there.listening.wait()
        many = [NoteChanged(7, n, "created") for n in range(400)]  # more than one NOTIFY holds
        await here_bus.publish([ProjectChanged(7, 3, "updated"), *many])
        async with asyncio.timeout(scaled(10)):
            await all_arrived.wait()
        await asyncio.sleep(0.2)  # time for a notice of its own to have reached the origin
    finally:
        await here.close()
        await there.close()
    assert heard_there == [ProjectChanged(7, 3, "updated"), *many]
    assert heard_here == []


async def test_events_queued_at_close_are_still_announced(fable: Fable) -> None:
    bus, listener_bus = EventBus(), EventBus()
    closing, listening = ChangeFeed(fable.db, bus), ChangeFeed(fable.db, listener_bus)
    heard: list[Event] = []
    arrived = asyncio.Event()
    listening.subscribe(lambda e: (heard.append(e), arrived.set()))
    try:
        async with asyncio.timeout(scaled(10)):
            await listening.listening.wait()
        await bus.publish([NoteChanged(1, 2, "deleted")])
        await closing.close()  # before its batch was due
        async with asyncio.timeout(scaled(10)):
            await arrived.wait()
    finally:
        await listening.close()
    assert heard == [NoteChanged(1, 2, "deleted")]


async def test_a_malformed_notice_on_the_channel_is_ignored(fable: Fable) -> None:
    """Anyone with database access can NOTIFY the channel: a payload that is not ours is logged
    and dropped, and the notices after it still arrive."""
    listening = ChangeFeed(fable.db, EventBus())
    heard: list[Event] = []
    arrived = asyncio.Event()
    listening.subscribe(lambda e: (heard.append(e), arrived.set()))
    try:
        async with asyncio.timeout(scaled(10)):
            await listening.listening.wait()
        async with fable.db.reading() as session:
            for payload in ("not json", '{"o": "x", "e": [["q", 1, 2, "created"]]}', '{"e": []}',
                            '{"o": "x", "e": [["n", 1, 2, "created"]]}'):
                await session.execute(select(func.pg_notify(CHANNEL, payload)))
        async with asyncio.timeout(scaled(10)):
            await arrived.wait()
    finally:
        await listening.close()
    assert heard == [NoteChanged(1, 2, "created")]
