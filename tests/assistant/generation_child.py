"""A Fable process for the crash test: ``generate USER CONV`` starts an answer and waits to be
killed; ``restart USER CONV`` is the next start: it recovers interrupted messages and prints
what a reconnecting client receives, as JSON."""

from __future__ import annotations

import asyncio
import json
import sys

from fable_core.infra.generations import recover_interrupted
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def main(mode: str, user_id: int, conversation_id: int) -> None:
    fable = await Fable.open()
    assistant = fable.assistant
    caller = Caller(user_id=user_id, username="alice")
    if mode == "generate":
        assistant.flush_interval = 0.05
        await assistant.send(caller, conversation_id, "write a long answer")
        await asyncio.Event().wait()  # until SIGKILL
    await recover_interrupted(fable.db, stale_after=0)
    async for event in assistant.follow(caller, conversation_id):
        print(json.dumps({"event": event.event, **event.data}))
    await fable.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
