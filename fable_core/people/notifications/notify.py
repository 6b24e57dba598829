"""How any domain tells a user something: :func:`notify` adds notifications to their inboxes
inside the caller's transaction, so a notification exists exactly when what it tells of
committed. Sending them to devices (Web Push) happens later, off the request path: the same
transaction signals :data:`CHANNEL` (PostgreSQL delivers a NOTIFY only when it commits, and
drops it on a rollback), which wakes the push sender of every process that runs jobs.

Kinds and their wording, so that an inbox reads as one voice (titles are short sentences
without a final stop; ``data`` names what the notification is about, and the UI links to it):

============  =====================================================  ==========================
kind          title                                                  data
============  =====================================================  ==========================
``share``     "alice shared the project Garden with you"             ``project_id`` / ``note_id``
``unshare``   "alice stopped sharing the note Plans with you"        ``project_id`` / ``note_id``
``group``     "alice added you to the group Family"                  ``group_id``
``answer``    "The assistant answered in Trip ideas"                 ``conversation_id``
``due``       "Due today: Call the dentist"                          ``note_id``
============  =====================================================  ==========================
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, get_args

from sqlalchemy import func, insert, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import Notification
from fable_core.tools import Context

__all__ = ["CHANNEL", "KINDS", "NotificationKind", "add_notifications", "announce", "notify"]

NotificationKind = Literal["share", "unshare", "group", "answer", "due"]
KINDS: tuple[NotificationKind, ...] = get_args(NotificationKind)
CHANNEL = "fable_notifications"
"""The PostgreSQL channel a committed notification is announced on (no payload: the sender
reads what is pending)."""


async def notify(ctx: Context, user_ids: Iterable[int], kind: NotificationKind, title: str, *,
                 body: str = "", data: dict[str, Any] | None = None, key: str | None = None) -> None:
    """One notification for each of ``user_ids`` (each once). ``data`` names what it is about
    (``{"project_id": 3}``); with ``key`` a user gets it at most once (a second one with the
    same key is dropped, whoever sends it)."""
    await add_notifications(ctx.session, user_ids, kind, title, body=body, data=data, key=key)


async def add_notifications(session: AsyncSession, user_ids: Iterable[int], kind: NotificationKind, title: str, *,
                            body: str = "", data: dict[str, Any] | None = None, key: str | None = None) -> None:
    """:func:`notify` for code that holds a session and no tool context (a job, an answer
    finishing in the background)."""
    rows = [{"user_id": user_id, "kind": kind, "title": title[:300], "body": body, "data": data, "key": key}
            for user_id in dict.fromkeys(user_ids)]
    if not rows:
        return
    if key is None:
        await session.execute(insert(Notification), rows)
    else:
        await session.execute(pg_insert(Notification).values(rows).on_conflict_do_nothing(
            index_elements=["user_id", "key"], index_where=Notification.key.is_not(None)))
    await announce(session)


async def announce(session: AsyncSession) -> None:
    """Signal :data:`CHANNEL` when ``session``'s transaction commits (several signals in one
    transaction are delivered as one)."""
    await session.execute(select(func.pg_notify(CHANNEL, "")))
