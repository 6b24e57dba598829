"""How any domain tells a user something: :func:`notify` adds notifications to their inboxes
inside the caller's transaction, so a notification exists exactly when what it tells of
committed. Sending them to devices (Web Push) happens later, off the request path."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from sqlalchemy import insert
from sqlalchemy.dialects.postgresql import insert as pg_insert

from fable_core.db.models import Notification
from fable_core.tools import Context

__all__ = ["NotificationKind", "notify"]

NotificationKind = Literal["share", "unshare", "group", "answer", "due"]


async def notify(ctx: Context, user_ids: Iterable[int], kind: NotificationKind, title: str, *,
                 body: str = "", data: dict[str, Any] | None = None, key: str | None = None) -> None:
    """One notification for each of ``user_ids`` (each once). ``data`` names what it is about
    (``{"project_id": 3}``); with ``key`` a user gets it at most once (a second one with the
    same key is dropped, whoever sends it)."""
    rows = [{"user_id": user_id, "kind": kind, "title": title[:300], "body": body, "data": data, "key": key}
            for user_id in dict.fromkeys(user_ids)]
    if not rows:
        return
    if key is None:
        await ctx.session.execute(insert(Notification), rows)
        return
    statement = pg_insert(Notification).values(rows).on_conflict_do_nothing(
        index_elements=["user_id", "key"], index_where=Notification.key.is_not(None))
    await ctx.session.execute(statement)
