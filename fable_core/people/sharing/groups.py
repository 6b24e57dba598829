"""Groups: platform-wide sets of users to share with at once.

Admins create and delete groups; a group's owners (and admins) add and remove members and
change their role; anyone may leave a group. Everyone sees which groups exist (to share with
them); a group's members are shown to its members and to admins. Names are unique, case ignored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert

from fable_core.db.models import Group, GroupMember, User
from fable_core.errors import Conflict, Forbidden, InvalidInput, NotFound
from fable_core.people.notifications.notify import notify
from fable_core.people.sharing.people import find_group, find_user
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import belongs_to, is_group_member, member_is, membership
from fable_core.tools.results import RowId

__all__ = ["GroupName", "Username"]

GroupName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100)]
Username = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]
Role = Literal["member", "owner"]


class GroupSummary(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    description: str = ""
    members: int
    role: Role | None = Field(None, description="Yours, when you are in it.")


class GroupMemberView(BaseModel):
    username: str
    role: Role


class GroupDetail(GroupSummary):
    created_at: datetime
    member_list: list[GroupMemberView] = Field(default_factory=list, description="Shown to members and admins.")


class GroupPage(BaseModel):
    items: list[GroupSummary]


class GroupDeleted(BaseModel):
    id: int
    deleted: bool = True


async def _detail(ctx: Context, group: Group) -> GroupDetail:
    rows = (await ctx.session.execute(
        select(User.username, GroupMember.role).join(User, User.id == GroupMember.user_id)
        .where(GroupMember.group_id == group.id).order_by(GroupMember.role.desc(), func.lower(User.username)))).all()
    mine = await is_group_member(ctx.session, group, ctx.user_id)
    shown = mine is not None or ctx.caller.is_admin
    return GroupDetail.model_validate({
        "id": group.id, "name": group.name, "description": group.description, "members": len(rows), "role": mine,
        "created_at": group.created_at,
        "member_list": [{"username": u, "role": r} for u, r in rows] if shown else []})


async def _managed(ctx: Context, group_id: int) -> Group:
    """The group, if the caller may manage its members (an owner of it, or an admin)."""
    group = await ctx.session.get(Group, group_id, with_for_update=True)
    if group is None:
        raise NotFound(f"group {group_id} not found", group_id=group_id)
    if not ctx.caller.is_admin and await is_group_member(ctx.session, group, ctx.user_id) != "owner":
        raise Forbidden(f"only the owners of group {group.name!r} and admins manage its members", group_id=group_id)
    return group


@tool(group="sharing", title="Create a group", scope="write", admin=True, route=Route("POST", "/groups", status=201))
async def create_group(ctx: Context, name: GroupName, description: Annotated[str, StringConstraints(
        max_length=2000)] = "", owner: Username | None = None) -> GroupDetail:
    """Create a group of people to share with at once (admins only).

    Args:
        owner: Its first owner, who manages its members (default: you).
    """
    taken = await ctx.session.scalar(select(Group.id).where(func.lower(Group.name) == name.lower()))
    if taken is not None:
        raise Conflict(f"group {taken} is already called {name!r}", existing_group_id=taken)
    first = await find_user(ctx.session, owner) if owner is not None else None
    group = Group(name=name, description=description, created_by=ctx.user_id)
    ctx.session.add(group)
    await ctx.session.flush()
    await ctx.session.execute(insert(GroupMember).values(
        group_id=group.id, user_id=first.id if first else ctx.user_id, role="owner"))
    await ctx.session.refresh(group, ["created_at"])
    return await _detail(ctx, group)


@tool(group="sharing", title="Delete a group", scope="write", admin=True, destructive=True, idempotent=False,
      route=Route("DELETE", "/groups/{group_id}"))
async def delete_group(ctx: Context, group_id: RowId) -> GroupDeleted:
    """Delete a group (admins only); what was shared with it is no longer shared with its members."""
    group = await ctx.session.get(Group, group_id)
    if group is None:
        raise NotFound(f"group {group_id} not found", group_id=group_id)
    await ctx.session.execute(delete(Group).where(Group.id == group.id))
    return GroupDeleted(id=group_id)


@tool(group="sharing", title="List groups", scope="read", route=Route("GET", "/groups"))
async def list_groups(ctx: Context) -> GroupPage:
    """List the groups (to share with), with their size and your role in each."""
    members = func.count(GroupMember.user_id)
    mine = func.max(GroupMember.role).filter(member_is(ctx.user_id))
    rows = (await ctx.session.execute(
        select(Group.id, Group.name, Group.description, members, mine)
        .outerjoin(GroupMember, GroupMember.group_id == Group.id)
        .group_by(Group.id).order_by(func.lower(Group.name)))).all()
    return GroupPage.model_validate({"items": [{"id": i, "name": n, "description": d, "members": c, "role": r}
                                               for i, n, d, c, r in rows]})


@tool(group="sharing", title="Get a group", scope="read", route=Route("GET", "/groups/{group_id}"))
async def get_group(ctx: Context, group_id: RowId) -> GroupDetail:
    """A group with its members (shown to its members and to admins)."""
    group = await ctx.session.get(Group, group_id)
    if group is None:
        raise NotFound(f"group {group_id} not found", group_id=group_id)
    return await _detail(ctx, group)


@tool(group="sharing", title="Add a group member", scope="write", idempotent=True, confirm=True,
      route=Route("POST", "/groups/{group_id}/members"))
async def add_group_member(ctx: Context, group_id: RowId, username: Username, role: Role = "member") -> GroupDetail:
    """Add a user to a group or change their role (group owners and admins)."""
    group = await _managed(ctx, group_id)
    user = await find_user(ctx.session, username, asker=(ctx.fable.db, ctx.user_id))
    before = await is_group_member(ctx.session, group, user.id)
    if before == "owner" and role == "member":
        await _refuse_last_owner(ctx, group, user.id)
    await ctx.session.execute(insert(GroupMember).values(group_id=group.id, user_id=user.id, role=role)
                              .on_conflict_do_update(index_elements=["group_id", "user_id"], set_={"role": role}))
    if before is None and not belongs_to(user.id, ctx.user_id):
        await notify(ctx, [user.id], "group", f"{ctx.caller.username or 'An admin'} added you to the group "
                     f"“{group.name}”", data={"group_id": group.id})
    return await _detail(ctx, group)


@tool(group="sharing", title="Remove a group member", scope="write", destructive=True, idempotent=True,
      route=Route("DELETE", "/groups/{group_id}/members/{username}"))
async def remove_group_member(ctx: Context, group_id: RowId, username: Username) -> GroupDetail:
    """Remove a user from a group (group owners and admins), or yourself to leave it."""
    leaving = username.casefold() == (ctx.caller.username or "").casefold()
    if leaving:
        group = await find_group(ctx.session, group_id)
        user_id = ctx.user_id
    else:
        group = await _managed(ctx, group_id)
        user_id = (await find_user(ctx.session, username)).id
    role = await is_group_member(ctx.session, group, user_id)
    if role is None:
        raise NotFound(f"{username!r} is not in group {group.name!r}", username=username)
    if role == "owner":
        await _refuse_last_owner(ctx, group, user_id)
    await ctx.session.execute(delete(GroupMember).where(membership(group.id, user_id)))
    return await _detail(ctx, group)


async def _refuse_last_owner(ctx: Context, group: Group, user_id: int) -> None:
    owners = (await ctx.session.execute(select(GroupMember.user_id).where(
        GroupMember.group_id == group.id, GroupMember.role == "owner"))).scalars().all()
    if list(owners) == [user_id]:
        raise InvalidInput(f"they are the last owner of group {group.name!r}: make another member an owner first",
                           field="username")
