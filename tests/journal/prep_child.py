"""A Fable process that runs jobs (as ``fable serve`` does), for the test of several processes
on one database: it opens with ``jobs=True`` (so it runs the prep job, every second as the test's
``FABLE_JOB_EVERY`` says),
waits until USER's journal of DAY is no longer being prepared, lets its own attempt end, and
prints the day's state as JSON."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import date

from sqlalchemy import select

from fable_core.db.models import JournalDay
from fable_core.runtime import Fable


async def main(user_id: int, day: date) -> None:
    fable = await Fable.open(jobs=True)
    state = None
    for _ in range(600):
        async with fable.db.reading() as session:
            state = await session.scalar(select(JournalDay.prep_state).where(
                JournalDay.user_id == user_id, JournalDay.day == day))
        if state not in (None, "none", "preparing"):
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.0)  # this process's own catch-up, if it lost the claim, has ended too
    await fable.close()
    print(json.dumps({"state": state}))


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), date.fromisoformat(sys.argv[2])))
