"""Who a task is assigned to, and the agendas' filter by it.

A task may have an assignee: a user who may change it (its owner, or someone it or its project is
shared with as editor or admin). Assigning it to anyone else is refused (InvalidInput) and changes
nothing. Results name the assignee by username (``assignee``), absent when there is none.

An agenda is the caller's: by default (``assignee="me"``) it holds the tasks assigned to the
caller and those assigned to nobody, never those assigned to someone else. ``"everyone"`` lifts
the filter, ``"nobody"`` keeps the unassigned tasks only, and a username keeps that user's.
Unknown names are counted like the sharing tools' (``unknown_user``), so usernames cannot be
learned wholesale.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints
from sqlalchemy import ColumnElement, bindparam, case, func, or_, select

from fable_core.db.models import Note, User
from fable_core.errors import InvalidInput, NotFound
from fable_core.infra.rate_limits import check_attempts, count_attempt
from fable_core.tools import Context
from fable_core.tools.access import may_change_note

__all__ = ["ASSIGNEE_COLUMN", "Assignee", "AssigneeFilter", "AssigneeMode", "assignee_clause", "assignee_filter",
           "assignee_name", "choose_assignee"]

Assignee = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64), Field(
    description='A username, or "me": someone who may edit the task.')]
AssigneeFilter = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64), Field(
    description='"me": yours and unassigned; "everyone"; "nobody": unassigned; or a username.')]
AssigneeMode = Literal["me", "nobody", "user"]

# the username of a row's assignee, read only for the rows that have one
ASSIGNEE_COLUMN = case((Note.assignee_id.is_(None), None), else_=select(User.username).where(
    User.id == Note.assignee_id).scalar_subquery()).label("assignee")


async def _user_named(ctx: Context, username: str) -> User:
    if username.casefold() == "me":
        user = await ctx.session.get(User, ctx.user_id)
        if user is None:
            raise InvalidInput('"me" names no account here', field="assignee")
        return user
    await check_attempts(ctx.fable.db, "unknown_user", str(ctx.user_id))
    user = await ctx.session.scalar(select(User).where(func.lower(User.username) == username.strip().lower()))
    if user is None:
        await count_attempt(ctx.fable.db, "unknown_user", str(ctx.user_id))
        raise NotFound(f"no user is called {username!r}", username=username, field="assignee")
    return user


async def choose_assignee(ctx: Context, username: str, *, owner_id: int, note_id: int | None,
                          project_id: int | None) -> User:
    """The user ``username`` names, if they may change the task (InvalidInput otherwise)."""
    user = await _user_named(ctx, username)
    if not await may_change_note(ctx.session, user.id, owner_id=owner_id, note_id=note_id, project_id=project_id):
        raise InvalidInput(f"{user.username!r} cannot edit this task: assign it to its owner or to someone its "
                           "project is shared with as editor", field="assignee", username=user.username)
    return user


async def assignee_name(ctx: Context, assignee_id: int | None) -> str | None:
    if assignee_id is None:
        return None
    user = await ctx.session.get(User, assignee_id)
    return user.username if user is not None else None


async def assignee_filter(ctx: Context, assignee: str | None) -> tuple[AssigneeMode, int | None] | None:
    """What an agenda's ``assignee`` asks for: None (no filter, "everyone"), or a mode and a user id."""
    if assignee is None or assignee.casefold() == "everyone":
        return None
    if assignee.casefold() == "me":
        return "me", ctx.user_id
    if assignee.casefold() == "nobody":
        return "nobody", None
    return "user", (await _user_named(ctx, assignee)).id


def assignee_clause(mode: AssigneeMode, user_id: int | None) -> ColumnElement[bool]:
    """The WHERE clause of a mode, its user id the bind parameter ``assignee_id`` (a statement
    built once runs again with another)."""
    if mode == "nobody":
        return Note.assignee_id.is_(None)
    wanted: Any = Note.assignee_id == bindparam("assignee_id", user_id)
    return or_(Note.assignee_id.is_(None), wanted) if mode == "me" else wanted
