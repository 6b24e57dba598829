"""The signed-in person's browser sessions as tools: list them, end one.

For the person in person only (``credentials="session"``): a leaked key must not see where its
owner signs in, nor sign them out. Ending a session announces it
(:mod:`fable_core.identity.revocations`), so the process that ended it refuses its cookie at once
and the others within moments; the REST surface clears the cookie of a session that ended
during its own call (:mod:`fable_web.rest`).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from fable_core.identity import login_sessions
from fable_core.identity.types import RowId
from fable_core.tools import Context, Route, tool
from fable_core.tools.results import Deleted

__all__ = ["SessionList", "SessionView"]


class SessionView(BaseModel):
    id: int
    created_at: datetime
    last_seen_at: datetime
    user_agent: str
    ip: str
    current: bool


class SessionList(BaseModel):
    items: list[SessionView]


@tool(group="account", title="List your sessions", scope="read", credentials="session", agents=False,
      route=Route("GET", "/auth/sessions"))
async def list_sessions(ctx: Context) -> SessionList:
    """Your signed-in browsers, most recently seen first."""
    rows = await login_sessions.list_sessions(ctx.session, ctx.user_id)
    return SessionList(items=[SessionView(id=r.id, created_at=r.created_at, last_seen_at=r.last_seen_at,
                                          user_agent=r.user_agent, ip=r.ip, current=r.id == ctx.caller.session_id)
                              for r in rows])


@tool(group="account", title="End a session", scope="write", destructive=True, idempotent=True,
      credentials="session", agents=False, route=Route("DELETE", "/auth/sessions/{session_id}"))
async def end_session(ctx: Context, session_id: RowId) -> Deleted:
    """Sign one of your browsers out."""
    await login_sessions.end_session(ctx.session, ctx.user_id, session_id)
    return Deleted(id=session_id)
