"""An answer that finished while nobody followed it: its owner gets a notification.

Whoever follows an answer's stream (the chat page, ``follow_answer``) sees it end; nobody else
needs telling. So when an answer ends (done, failed, or cut off) and its buffer has no
follower at that moment, the conversation's owner is notified (kind ``answer``, ``data``:
``conversation_id``), after the followers' streams have ended and after the conversation got
its title. A stopped answer is not told of (its owner stopped it), nor one whose process died
(nobody is left to tell). Followers on another replica do not count (the buffer lives in the
process writing the answer): their owner may be told of an answer they watched.
"""

from __future__ import annotations

import logging

from sqlalchemy import select

from fable_core.db.database import Database
from fable_core.db.models import Conversation
from fable_core.errors import FableError
from fable_core.people.notifications.notify import add_notifications
from fable_core.tools.caller import Caller

__all__ = ["tell_away"]

_EXCERPT = 200
_log = logging.getLogger(__name__)
_TITLES = {
    "done": "The assistant answered in {title}",
    "error": "The assistant's answer failed in {title}",
    "interrupted": "The assistant's answer was cut off in {title}",
}


async def tell_away(db: Database, caller: Caller, conversation_id: int, status: str, said: str) -> None:
    """Notify ``caller`` that the answer in ``conversation_id`` ended with ``status``; ``said`` is
    the answer (or the error), whose beginning is the body. A failure is logged, never raised:
    the answer itself is stored already."""
    try:
        async with db.transaction() as session:
            title = await session.scalar(select(Conversation.title).where(Conversation.id == conversation_id))
            if title is None:  # deleted meanwhile
                return
            await add_notifications(session, [caller.user_id], "answer",
                                    _TITLES.get(status, _TITLES["done"]).format(title=title),
                                    body=_excerpt(said), data={"conversation_id": conversation_id})
    except FableError as e:
        _log.info("could not tell user %s of the answer in conversation %s: %s", caller.user_id,
                  conversation_id, e.message)


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _EXCERPT else text[:_EXCERPT - 1].rstrip() + "…"
