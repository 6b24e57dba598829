"""``tool_usage``: how often each tool was called, from the usage rows the dispatcher records.

What a client is offered by default (:data:`fable_core.tools.toolsets.DEFAULT`) should be what
people use most; this is the instance's own evidence, per surface, for choosing
``FABLE_MCP_TOOLSETS`` or a key's toolsets, and for the next change of the default.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

from pydantic import BaseModel, Field
from sqlalchemy import func, select

from fable_core.db.models import AppLog
from fable_core.tools import Context, Route, tool
from fable_core.tools.caller import Surface
from fable_core.tools.toolsets import DEFAULT

__all__ = ["ToolUsage", "ToolUsageRow", "tool_usage"]


class ToolUsageRow(BaseModel):
    tool: str
    toolset: str
    calls: int
    people: int = Field(description="distinct accounts that called it")
    default: bool = Field(description="in the default MCP offer")


class ToolUsage(BaseModel):
    days: int
    items: list[ToolUsageRow] = Field(description="most called first; tools never called are left out")


@tool(group="admin", title="Tool usage", scope="read", admin=True, credentials="session", agents=False,
      route=Route("GET", "/admin/tool-usage"))
async def tool_usage(ctx: Context, days: Annotated[int, Field(ge=1, le=365)] = 30,
                     surface: Surface | None = None,
                     ) -> ToolUsage:
    """Admin: calls per tool over the last days (one surface, or all), most called first, with
    its toolset and whether the default MCP offer holds it."""
    since = datetime.now(UTC) - timedelta(days=days)
    query = (select(AppLog.action, func.count(), func.count(func.distinct(AppLog.user_id)))
             .where(AppLog.category == "usage", AppLog.created_at >= since)
             .group_by(AppLog.action).order_by(func.count().desc(), AppLog.action))
    if surface is not None:
        query = query.where(AppLog.surface == surface)
    rows = (await ctx.session.execute(query)).all()
    registry = ctx.fable.registry
    items = [ToolUsageRow(tool=name, toolset=t.group, calls=calls, people=people, default=name in DEFAULT)
             for name, calls, people in rows if (t := registry.get(name)) is not None]
    return ToolUsage(days=days, items=items)
