"""``list_logs``: the admin's view of ``app_logs``, every category, newest first, filtered and paged;
``list_audit``: the audit category alone, in the shape the admin page has always read.

Errors carry their tracebacks here, and only here: the tool is for admins (``admin=True``), so
nobody else is offered it or may run it, on any surface.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints
from sqlalchemy import String, cast, or_, select
from sqlalchemy.sql.elements import ColumnElement

from fable_core.admin.audit import audit_page
from fable_core.db.models import AppLog
from fable_core.errors import InvalidInput
from fable_core.tools import Context, Route, tool
from fable_core.tools.paging import Cursor, Limit, NewestFirst
from fable_core.tools.results import absent_when_none

__all__ = ["CATEGORIES", "AuditEntry", "AuditPage", "LogEntry", "LogPage", "list_audit", "list_logs"]

_PAGES = NewestFirst("logs", AppLog.id, AppLog.created_at)

CATEGORIES = ("audit", "error", "request", "usage")
Category = Literal["audit", "error", "request", "usage"]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]


class LogEntry(BaseModel):
    id: int
    at: datetime
    category: str
    action: str = Field(description="audit: user.disable, auth.sign_in...; usage/error: the tool; request: the route.")
    user: str | None = absent_when_none("Who (the account's name then).")
    user_id: int | None = absent_when_none()
    surface: str | None = absent_when_none()
    method: str | None = absent_when_none()
    status: int | None = absent_when_none()
    duration_ms: float | None = absent_when_none()
    error_type: str | None = absent_when_none()
    error_message: str | None = absent_when_none()
    traceback: str | None = absent_when_none()
    target: dict[str, Any] | None = absent_when_none()
    details: dict[str, Any] | None = absent_when_none()


class LogPage(BaseModel):
    items: list[LogEntry]
    next_cursor: str | None = None


@tool(group="admin", title="List app logs", scope="read", admin=True, credentials="session",
      route=Route("GET", "/logs"))
async def list_logs(ctx: Context, category: Category | None = None, since: datetime | None = None,
                    until: datetime | None = None, user: Text | None = None, action: Text | None = None,
                    query: Text | None = None, limit: Limit = 50, cursor: Cursor = None) -> LogPage:
    """Admin: app logs newest first. category audit|error|request|usage; since/until;
    user (name); action (prefix); query (text in action, details, error)."""
    if since is not None and until is not None and since >= until:
        raise InvalidInput("since must be before until", field="since")
    conditions: list[ColumnElement[bool]] = []
    if category is not None:
        conditions.append(AppLog.category == category)
    if since is not None:
        conditions.append(AppLog.created_at >= since)
    if until is not None:
        conditions.append(AppLog.created_at < until)
    if user is not None:
        conditions.append(AppLog.username.ilike(_escape(user), escape="\\"))
    if action is not None:
        conditions.append(AppLog.action.ilike(_escape(action) + "%", escape="\\"))
    if query is not None:
        like = "%" + _escape(query) + "%"
        conditions.append(or_(AppLog.action.ilike(like, escape="\\"), AppLog.error_message.ilike(like, escape="\\"),
                              cast(AppLog.details, String).ilike(like, escape="\\")))
    rows = list(await ctx.session.scalars(_PAGES.query(select(AppLog).where(*conditions), cursor, limit)))
    kept, next_cursor = _PAGES.page(rows, limit)
    return LogPage(items=[entry(r) for r in kept], next_cursor=next_cursor)


def entry(row: AppLog) -> LogEntry:
    details = dict(row.details or {})
    target = details.pop("target", None)
    return LogEntry(id=row.id, at=row.created_at, category=row.category, action=row.action, user=row.username,
                    user_id=row.user_id, surface=row.surface, method=row.method, status=row.status_code,
                    duration_ms=row.duration_ms, error_type=row.error_type, error_message=row.error_message,
                    traceback=row.traceback, target=target, details=details or None)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class AuditEntry(BaseModel):
    id: int
    at: datetime
    actor: str | None = Field(description="Who (the account's name then, or cli:<name> for an operator).")
    actor_id: int | None = Field(description="Their account (null: an operator, or an account since deleted).")
    surface: str | None
    action: str = Field(description="user.disable, invitation.create, instance.mail...")
    target: dict[str, Any] | None = Field(description="What it was done to: kind, id, name.")
    details: dict[str, Any]


class AuditPage(BaseModel):
    items: list[AuditEntry]
    next_cursor: str | None = None


@tool(group="admin", title="Read the audit log", scope="read", admin=True, credentials="session", agents=False,
      route=Route("GET", "/admin/audit"))
async def list_audit(ctx: Context, limit: Limit = 50, cursor: Cursor = None) -> AuditPage:
    """Admin: the audit log, newest first, a page at a time."""
    items, next_cursor = await audit_page(ctx.session, limit, cursor)
    return AuditPage(items=[AuditEntry.model_validate(i) for i in items], next_cursor=next_cursor)
