"""Shares: a project (with everything in it) or a note, shared with a user or a group.

The owner of the item, and whoever it is shared with as ``admin``, may share it, change a
share's permission (sharing again) and revoke a share; a user may also drop a share made to
them. The people a share reaches hear of it (notifications). What a share lets them do is
decided in :mod:`fable_core.tools.access` alone.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field
from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import aliased

from fable_core.admin.audit import Actor, Target, audit
from fable_core.db.models import Group, GroupMember, Note, Project, Share, User
from fable_core.errors import InvalidInput, NotFound
from fable_core.people.notifications.notify import NotificationKind, notify
from fable_core.people.sharing.groups import GroupName, Username
from fable_core.people.sharing.people import find_group, find_user
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import (
    SharedPermission,
    belongs_to,
    forget_reach,
    get_visible,
    may_change_note,
    require,
    shared_by,
    shared_with,
)
from fable_core.tools.results import RowId

__all__: list[str] = []


class ShareView(BaseModel):
    id: int
    project_id: int | None = None
    note_id: int | None = None
    title: str = Field(description="The shared project's or note's title.")
    owner: str
    with_user: str | None = None
    with_group: str | None = None
    permission: SharedPermission
    shared_by: str | None = None
    created_at: datetime


class SharePage(BaseModel):
    items: list[ShareView]


class Unshared(BaseModel):
    id: int
    revoked: bool = True


_Owner, _Grantee, _Sharer = aliased(User), aliased(User), aliased(User)


def _listing() -> Any:
    """Shares with the names a reader needs: the item's title and owner, the grantee, the sharer."""
    return (
        select(Share, func.coalesce(Project.title, Note.title), _Owner.username, _Grantee.username, Group.name,
               _Sharer.username)
        .join(_Owner, _Owner.id == Share.owner_id)
        .outerjoin(Project, Project.id == Share.project_id).outerjoin(Note, Note.id == Share.note_id)
        .outerjoin(_Grantee, _Grantee.id == Share.grantee_user_id).outerjoin(Group, Group.id == Share.grantee_group_id)
        .outerjoin(_Sharer, _Sharer.id == Share.shared_by)
        .order_by(Share.created_at.desc(), Share.id.desc())
    )


def _view(row: Any) -> ShareView:
    share, title, owner, user, group, sharer = row
    return ShareView(id=share.id, project_id=share.project_id, note_id=share.note_id, title=title, owner=owner,
                     with_user=user, with_group=group, permission=share.permission, shared_by=sharer,
                     created_at=share.created_at)


async def _item(ctx: Context, project_id: int | None, note_id: int | None) -> Project | Note:
    """The item a share tool names, which the caller may see."""
    if (project_id is None) == (note_id is None):
        raise InvalidInput("pass project_id or note_id: one item", field="project_id")
    if project_id is not None:
        return await get_visible(ctx.session, Project, project_id, ctx.caller)
    assert note_id is not None
    return await get_visible(ctx.session, Note, note_id, ctx.caller)


def _describe(item: Project | Note) -> str:
    return f"the project “{item.title}”" if isinstance(item, Project) else f"the note “{item.title}”"


def _about(item: Project | Note) -> dict[str, int]:
    return {"project_id": item.id} if isinstance(item, Project) else {"note_id": item.id}


async def _reached(ctx: Context, share: Share) -> list[int]:
    """Who a share reaches, besides the item's owner and the caller (who hear nothing of it)."""
    if share.grantee_user_id is not None:
        users = [share.grantee_user_id]
    else:
        users = list((await ctx.session.execute(
            select(GroupMember.user_id).where(GroupMember.group_id == share.grantee_group_id))).scalars())
    return [u for u in users if not belongs_to(u, share.owner_id) and not belongs_to(u, ctx.user_id)]


async def _tell(ctx: Context, share: Share, item: Project | Note, kind: NotificationKind, template: str) -> None:
    """Notify the people ``share`` reaches: ``template`` with {who}, {item}, {permission}, {via}."""
    group = await ctx.session.get(Group, share.grantee_group_id) if share.grantee_group_id is not None else None
    title = template.format(who=ctx.caller.username or "Someone", item=_describe(item), permission=share.permission,
                            via=f" (through the group “{group.name}”)" if group is not None else "")
    about = _about(item) if kind == "share" else {}  # a revoked item is no longer theirs to open
    await notify(ctx, await _reached(ctx, share), kind, title, data={**about, "permission": share.permission})


@tool(group="sharing", title="Share a project or note", scope="write", idempotent=True, confirm=True,
      route=Route("POST", "/shares"))
async def share(
    ctx: Context,
    project_id: RowId | None = None,
    note_id: RowId | None = None,
    with_user: Username | None = None,
    with_group: GroupName | None = None,
    permission: SharedPermission = "viewer",
) -> ShareView:
    """Share a project (all in it) or a note with a user or group: viewer reads, editor edits,
    admin also deletes and reshares. Sharing again changes the permission."""
    item = await _item(ctx, project_id, note_id)
    await require(ctx.session, ctx.caller, item, "admin")
    if (with_user is None) == (with_group is None):
        raise InvalidInput("pass with_user or with_group: one grantee", field="with_user")
    grantee: dict[str, int] = {}
    if with_user is not None:
        user = await find_user(ctx.session, with_user, asker=(ctx.fable.db, ctx.user_id))
        if belongs_to(user.id, ctx.user_id):
            raise InvalidInput("you cannot share with yourself", field="with_user")
        if belongs_to(user.id, item.user_id):
            raise InvalidInput(f"{user.username} owns it already", field="with_user")
        grantee["grantee_user_id"] = user.id
    else:
        assert with_group is not None
        grantee["grantee_group_id"] = (await find_group(ctx.session, with_group)).id
    column = "project_id" if isinstance(item, Project) else "note_id"
    values = {column: item.id, **grantee, "owner_id": item.user_id, "permission": permission,
              "shared_by": ctx.user_id}
    (grantee_column,) = grantee
    before = await ctx.session.scalar(select(Share.permission).where(
        getattr(Share, column) == item.id, getattr(Share, grantee_column) == grantee[grantee_column]))
    share_id = await ctx.session.scalar(insert(Share).values(values).on_conflict_do_update(
        index_elements=[column, grantee_column],
        index_where=getattr(Share, column).is_not(None) & getattr(Share, grantee_column).is_not(None),
        set_={"permission": permission, "shared_by": ctx.user_id, "updated_at": func.now()},
    ).returning(Share.id))
    forget_reach(ctx.session)
    row = await ctx.session.get(Share, share_id, populate_existing=True)
    assert row is not None
    if before is not None and before != permission:
        await _release_assignments(ctx, row)
    if before != permission:
        await audit(ctx.session, Actor.of(ctx.caller), "share.create" if before is None else "share.change",
                    Target("share", row.id), item={column: item.id}, **_grantee_of(with_user, with_group),
                    permission=permission)
    if before is None:
        await _tell(ctx, row, item, "share", "{who} shared {item} with you as {permission}{via}")
    elif before != permission:
        await _tell(ctx, row, item, "share", "{who} changed your access to {item} to {permission}{via}")
    return _view((await ctx.session.execute(_listing().where(Share.id == share_id))).one())


@tool(group="sharing", title="Revoke a share", scope="write", destructive=True, idempotent=False,
      route=Route("DELETE", "/shares/{share_id}"))
async def unshare(ctx: Context, share_id: RowId) -> Unshared:
    """Revoke a share (id from list_shares): the item's owner and admins may, you one made to you."""
    row = await ctx.session.get(Share, share_id)
    mine = row is not None and row.grantee_user_id is not None and belongs_to(row.grantee_user_id, ctx.user_id)
    if row is None:
        raise NotFound(f"share {share_id} not found", share_id=share_id)
    try:
        item = await _item(ctx, row.project_id, row.note_id)
    except NotFound:
        raise NotFound(f"share {share_id} not found", share_id=share_id) from None
    if not mine:
        await require(ctx.session, ctx.caller, item, "admin")
    await _tell(ctx, row, item, "unshare", "{who} stopped sharing {item} with you{via}")
    await ctx.session.execute(delete(Share).where(Share.id == row.id))
    await audit(ctx.session, Actor.of(ctx.caller), "share.revoke", Target("share", row.id),
                item={"project_id": row.project_id} if row.project_id else {"note_id": row.note_id})
    forget_reach(ctx.session)
    await _release_assignments(ctx, row)
    return Unshared(id=share_id)


async def _release_assignments(ctx: Context, share: Share) -> None:
    """After a share was revoked or lowered: the tasks it covered that are assigned to someone it
    reached who may no longer change them become nobody's (else they would be hidden from every
    agenda: their owner's, as someone else's, and the assignee's, who cannot see them)."""
    if share.grantee_user_id is not None:
        users = [share.grantee_user_id]
    else:
        users = list((await ctx.session.execute(
            select(GroupMember.user_id).where(GroupMember.group_id == share.grantee_group_id))).scalars())
    covered = Note.project_id == share.project_id if share.project_id is not None else Note.id == share.note_id
    tasks = (await ctx.session.execute(select(Note).where(covered, Note.assignee_id.in_(users)))).scalars().all()
    for task in tasks:
        assert task.assignee_id is not None
        if not await may_change_note(ctx.session, task.assignee_id, owner_id=task.user_id, note_id=task.id,
                                     project_id=task.project_id):
            task.assignee_id = None


def _grantee_of(with_user: str | None, with_group: str | None) -> dict[str, str]:
    return {"with_user": with_user} if with_user is not None else {"with_group": with_group or ""}


@tool(group="sharing", title="List shares", scope="read", route=Route("GET", "/shares"))
async def list_shares(
    ctx: Context,
    project_id: RowId | None = None,
    note_id: RowId | None = None,
    shared: Literal["with_me", "by_me"] = "with_me",
) -> SharePage:
    """Who has a project or note; without one, what is shared with you (with_me, also through
    your groups) or by you (by_me)."""
    stmt = _listing()
    if project_id is not None or note_id is not None:
        item = await _item(ctx, project_id, note_id)
        stmt = stmt.where(Share.project_id == item.id if isinstance(item, Project) else Share.note_id == item.id)
    elif shared == "with_me":
        stmt = stmt.where(shared_with(ctx.user_id))
    else:
        stmt = stmt.where(shared_by(ctx.user_id))
    rows = (await ctx.session.execute(stmt.limit(500))).all()
    return SharePage(items=[_view(r) for r in rows])

