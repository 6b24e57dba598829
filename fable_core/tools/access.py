"""Who may see and change which rows: the one module that decides it.

A row is its owner's (``user_id``). Projects and notes are also shared (``shares``) with a user,
or with a group the user is in, at a permission: **viewer** reads; **editor** also changes
content (notes, tasks, milestones, work logs: create, edit, delete) but cannot delete the shared
item itself or reshare it; **admin** may also reshare it and delete it. Resolution, highest
permission wins: owner → a direct share → a group share → a note inherits its project's share.
A milestone and a note's versions, links and work log go with their project or note. The owner is
never locked out.

What a caller can reach is loaded once per database session (:func:`reach_of`: one query, the
shared projects and notes with their permission and owner) and used as arrays in predicates, so
indexes still serve them; a caller nothing is shared with gets exactly the owner-only predicates
of before. Every predicate on a row's owner lives here (a test fails on a ``user_id`` compared
anywhere else), and each caller says which question it asks:

- **readable**: may the caller read it (listings, loads, retrieval): :func:`readable`,
  :func:`visible`, :func:`get_visible` (which also checks a permission to change: ``need``),
  :func:`visible_ids`, :func:`reach_parts` for listings ordered by recency, :func:`visible_row` /
  :func:`fetch_visible` for the hot read; :func:`image_readable` for images (their owner's, or
  embedded in a note of the owner's the caller may read);
- **owned by**: is it the caller's own (their drafts, settings, conversations, duplicate titles
  of their own): :func:`owned_by`, :func:`owned_by_param`;
- **of user**: the rows of one account, by id (API keys, sessions, tokens; the notes of the owner
  of a note, among which its links resolve): :func:`of_user`, :func:`same_owner`;
- in Python, for rows already in memory: :func:`belongs_to`; in hand-written SQL: :func:`owner_sql`.

A row the caller cannot see is reported as ``NotFound``: never ``Forbidden``, which would leak
that it exists. ``Forbidden`` is for a row the caller sees but may not change as asked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, ClassVar, Literal, Protocol, TypeVar
from weakref import WeakKeyDictionary

from sqlalchemy import (
    BindParameter,
    Integer,
    Row,
    Select,
    all_,
    and_,
    any_,
    bindparam,
    case,
    exists,
    func,
    or_,
    select,
    true,
    union_all,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.orm import Mapped

from fable_core.db.models import (
    Group,
    GroupMember,
    Image,
    Milestone,
    Note,
    NoteEmbedding,
    NoteImage,
    NoteLink,
    NoteVersion,
    Project,
    Share,
    TaskLog,
    User,
)
from fable_core.errors import Forbidden, NotFound
from fable_core.tools.caller import Caller

__all__ = [
    "LEVELS",
    "OWNER_PARAM",
    "PROJECTS_PARAM",
    "ROW_PARAM",
    "SHARED_NOTES_PARAM",
    "Permission",
    "Reach",
    "SharedPermission",
    "belongs_to",
    "can_read",
    "check_delete_note",
    "fetch_visible",
    "forget_reach",
    "get_visible",
    "group_ids_of",
    "image_readable",
    "is_group_member",
    "level",
    "may",
    "may_change_note",
    "member_is",
    "membership",
    "not_assigned_to_others",
    "of_user",
    "owned_by",
    "owned_by_param",
    "owned_rows",
    "owner_column_is",
    "owner_sql",
    "permission_name",
    "reach_of",
    "reach_parts",
    "readable",
    "readable_param",
    "require",
    "same_owner",
    "same_space",
    "shared_by",
    "shared_with",
    "shares_to",
    "visible",
    "visible_ids",
    "visible_row",
]

OWNER_PARAM = "owner_id"
ROW_PARAM = "row_id"
PROJECTS_PARAM = "shared_projects"
SHARED_NOTES_PARAM = "shared_notes"

Permission = Literal["viewer", "editor", "admin", "owner"]
SharedPermission = Literal["viewer", "editor", "admin"]
LEVELS: dict[str, int] = {"viewer": 1, "editor": 2, "admin": 3, "owner": 4}
_NAMES = {v: k for k, v in LEVELS.items()}
_KINDS = {"notes": "note", "projects": "project", "milestones": "milestone", "task_logs": "work log",
          "note_versions": "version"}


def level(permission: str) -> int:
    return LEVELS[permission]


def permission_name(value: int) -> Permission:
    name: Permission = _NAMES[value]  # type: ignore[assignment]
    return name


class Owned(Protocol):
    """A model whose rows have an id and an owner: Note, Project, Milestone, Conversation, ..."""

    id: ClassVar[Mapped[int]]
    user_id: ClassVar[Mapped[int]]


M = TypeVar("M", bound=Owned)


# --- what a caller can reach ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reach:
    """What has been shared with one user (directly or through their groups), by others: the
    projects and notes, each with the highest permission that applies, and their owners."""

    user_id: int
    projects: Mapping[int, int] = field(default_factory=dict)  # project id -> level
    notes: Mapping[int, int] = field(default_factory=dict)  # note id (shared itself) -> level
    owner_of: Mapping[tuple[str, int], int] = field(default_factory=dict)  # ("project"|"note", id) -> owner id
    owners: Mapping[int, str] = field(default_factory=dict)  # owner id -> username

    @property
    def alone(self) -> bool:
        """Nothing is shared with the caller: the owner-only predicates apply."""
        return not self.projects and not self.notes

    def params(self) -> dict[str, Any]:
        """The bind parameters of the predicates built for this reach."""
        if self.alone:
            return {OWNER_PARAM: self.user_id}
        return {OWNER_PARAM: self.user_id, PROJECTS_PARAM: sorted(self.projects),
                SHARED_NOTES_PARAM: sorted(self.notes)}

    def note_level(self, owner_id: int, note_id: int, project_id: int | None) -> int:
        """The caller's level on a note (0: none): owner, else the best of its own share and
        its project's."""
        if owner_id == self.user_id:
            return LEVELS["owner"]
        return max(self.notes.get(note_id, 0), self.projects.get(project_id, 0) if project_id is not None else 0)

    def project_level(self, owner_id: int, project_id: int) -> int:
        return LEVELS["owner"] if owner_id == self.user_id else self.projects.get(project_id, 0)

    def owner_name(self, owner_id: int) -> str:
        return self.owners.get(owner_id, "someone")


_REACH_KEY = "fable.reach"


async def reach_of(session: AsyncSession | AsyncConnection, caller: Caller) -> Reach:
    """What ``caller`` can reach besides their own rows: one query, remembered for the rest of
    the database session or connection checkout (a call, or one phase of a call), so a revoked
    share stops working at the next call."""
    cache = _reach_cache(session)
    found = cache.get(caller.user_id)
    if found is None:
        found = cache[caller.user_id] = await _load_reach(session, caller.user_id)
    return found


# A connection's ``info`` belongs to the pooled DBAPI connection and outlives the checkout (the
# next user of that connection would read a reach from before a revocation): a checkout's reach
# is kept beside it, for as long as its AsyncConnection object lives.
_CHECKOUT_REACH: WeakKeyDictionary[AsyncConnection, dict[int, Reach]] = WeakKeyDictionary()


def _reach_cache(session: AsyncSession | AsyncConnection) -> dict[int, Reach]:
    if isinstance(session, AsyncConnection):
        return _CHECKOUT_REACH.setdefault(session, {})
    cache: dict[int, Reach] = session.info.setdefault(_REACH_KEY, {})
    return cache


def forget_reach(session: AsyncSession) -> None:
    """Drop what :func:`reach_of` remembered in this session (after a share changed in it)."""
    session.info.pop(_REACH_KEY, None)


def _level_of(permission: Any) -> Any:
    return case((permission == "admin", 3), (permission == "editor", 2), else_=1)


_LEVEL_SQL = func.max(_level_of(Share.permission))


@cache
def _reach_statement() -> Any:
    """The shares that reach ``:reach_user``, by owner and row: built once (every call that
    reads a reach ran it, and building it cost more than running it), the user bound."""
    user_id = bindparam("reach_user", type_=Integer)
    # the shares made to the user and those made to their groups, each through its own index (an
    # OR of the two, or a join the planner merges, would read every share made to any group)
    columns = (Share.project_id, Share.note_id, Share.owner_id, Share.permission)
    reaching = union_all(
        select(*columns).where(Share.grantee_user_id == user_id),
        select(*columns).where(Share.grantee_group_id == any_(func.array(group_ids_of(user_id).scalar_subquery()))),
    ).subquery()
    return (select(reaching.c.project_id, reaching.c.note_id, reaching.c.owner_id, User.username,
                   func.max(_level_of(reaching.c.permission)))
            .join(User, User.id == reaching.c.owner_id)
            .where(reaching.c.owner_id != user_id)
            .group_by(reaching.c.project_id, reaching.c.note_id, reaching.c.owner_id, User.username))


async def _load_reach(session: AsyncSession | AsyncConnection, user_id: int) -> Reach:
    rows = (await session.execute(_reach_statement(), {"reach_user": user_id})).all()
    projects: dict[int, int] = {}
    notes: dict[int, int] = {}
    owner_of: dict[tuple[str, int], int] = {}
    owners: dict[int, str] = {}
    for project_id, note_id, owner_id, username, value in rows:
        owners[owner_id] = username
        if project_id is not None:
            projects[project_id] = max(projects.get(project_id, 0), value)
            owner_of["project", project_id] = owner_id
        else:
            notes[note_id] = max(notes.get(note_id, 0), value)
            owner_of["note", note_id] = owner_id
    return Reach(user_id, projects, notes, owner_of, owners)


def shares_to(user_id: Any) -> Any:
    """The WHERE clause for the shares that reach ``user_id``: made to them, or to a group they
    are in."""
    return or_(Share.grantee_user_id == user_id,
               Share.grantee_group_id.in_(select(GroupMember.group_id).where(GroupMember.user_id == user_id)))


def shared_with(user_id: Any) -> Any:
    """The WHERE clause for the shares others made that reach ``user_id``."""
    return and_(shares_to(user_id), Share.owner_id != user_id)


def shared_by(user_id: Any) -> Any:
    """The WHERE clause for the shares of ``user_id``'s rows, and those they made."""
    return or_(Share.owner_id == user_id, Share.shared_by == user_id)


def group_ids_of(user_id: Any) -> Select[int]:
    """The ids of the groups ``user_id`` is in."""
    return select(GroupMember.group_id).where(GroupMember.user_id == user_id)


def membership(group_id: Any, user_id: Any) -> Any:
    """The WHERE clause for one user's membership of one group (values or columns)."""
    return and_(GroupMember.group_id == group_id, GroupMember.user_id == user_id)


def member_is(user_id: Any) -> Any:
    """The WHERE clause for the memberships of one user."""
    return GroupMember.user_id == user_id


async def is_group_member(session: AsyncSession, group: Group, user_id: int) -> str | None:
    """The user's role in the group (``member``/``owner``), or None."""
    role: str | None = await session.scalar(select(GroupMember.role).where(membership(group.id, user_id)))
    return role


# --- predicates -------------------------------------------------------------------------------


class _Binds:
    """The predicates' bind parameters: with the values of one reach, or left to bind at
    execution (statements built once per shape)."""

    def __init__(self, reach: Reach | None) -> None:
        self.values = reach.params() if reach is not None else {}

    def _bind(self, name: str, type_: Any = None) -> Any:
        if name in self.values:
            return bindparam(name, self.values[name], type_=type_)
        return bindparam(name, type_=type_)

    def owner(self, model: Any) -> Any:
        return model.user_id == self._bind(OWNER_PARAM)

    def projects(self) -> Any:
        return self._bind(PROJECTS_PARAM, ARRAY(Integer))

    def notes(self) -> Any:
        return self._bind(SHARED_NOTES_PARAM, ARRAY(Integer))

    def note_reach(self, note: Any) -> Any:
        """Notes shared with the caller, by their project or themselves (a Note or an alias)."""
        return or_(note.project_id == any_(self.projects()), note.id == any_(self.notes()))


def readable(model: Any, reach: Reach) -> Any:
    """The WHERE clause for rows of ``model`` the caller may read, with the values of their
    reach bound (named parameters: :meth:`Reach.params` gives them anew for another run)."""
    return _readable(model, reach.alone, _Binds(reach))


def readable_param(model: Any, alone: bool) -> Any:
    """:func:`readable` with its values left to bind at execution (``reach.params()``), for
    statements built once per shape: ``alone`` is :attr:`Reach.alone`."""
    return _readable(model, alone, _Binds(None))


def _readable(model: Any, alone: bool, b: _Binds) -> Any:
    if alone:
        if model in (NoteVersion, NoteEmbedding, NoteLink, Milestone, Project, Note):
            return b.owner(model)
        if model is TaskLog:  # a work log goes with its task
            return TaskLog.note_id.in_(select(Note.id).where(b.owner(Note)))
        raise TypeError(f"{model.__name__} is not shared: use owned_by")
    if model is Note:
        return or_(b.owner(Note), b.note_reach(Note))
    if model is Project:
        return or_(b.owner(Project), Project.id == any_(b.projects()))
    if model is Milestone:
        return or_(b.owner(Milestone), Milestone.project_id == any_(b.projects()))
    column = {NoteVersion: NoteVersion.note_id, NoteEmbedding: NoteEmbedding.note_id,
              NoteLink: NoteLink.source_id}.get(model)
    if column is not None:
        return or_(b.owner(model), column.in_(select(Note.id).where(b.note_reach(Note))))
    if model is TaskLog:
        return TaskLog.note_id.in_(select(Note.id).where(or_(b.owner(Note), b.note_reach(Note))))
    raise TypeError(f"{model.__name__} is not shared: use owned_by")


def image_readable(reach: Reach) -> Any:
    """The WHERE clause for images the caller may see: their own, and another's whose owner wrote
    its embed (``/api/images/<id>``, recorded in ``note_images``) into a note the caller may read
    (shared directly or by its project). Nobody sees another's image by embedding its id: not in
    their own note, and not by appending it to a note of the owner's they may edit."""
    b = _Binds(reach)
    if reach.alone:
        return b.owner(Image)
    embeds = exists(select(NoteImage.note_id).join(Note, Note.id == NoteImage.note_id).where(
        NoteImage.image_id == Image.id, NoteImage.added_by == Image.user_id, b.note_reach(Note)))
    return or_(b.owner(Image), embeds)


def visible(model: type[M], reach: Reach) -> Select[M]:
    """``SELECT model`` restricted to rows the caller may read."""
    return select(model).where(readable(model, reach))


def reach_parts(reach: Reach, page: Callable[[Any], Select[Any]]) -> list[Select[Any]]:
    """The notes the caller may read, as separately ordered statements to ``UNION ALL`` and
    order again: ``page(scope)`` builds one ordered, limited statement of notes for a WHERE
    clause. Owned notes are one index range; each shared project's notes another (a LATERAL
    scan per project of its ``(project_id, updated_at, id)`` index); notes shared themselves a
    third. One OR of the three would read every reachable note to order them."""
    b = _Binds(reach)
    own = page(b.owner(Note))
    if reach.alone:
        return [own]
    # what is shared with the caller is never theirs (a reach holds others' rows), and a note in a
    # project is the project owner's: the parts cannot overlap
    shared = func.unnest(b.projects()).table_valued("id").render_derived("shared_project")
    in_project = page(Note.project_id == shared.c.id).lateral()
    by_project = select(in_project).select_from(shared).join(in_project, true())
    itself = page(and_(Note.id == any_(b.notes()),
                       or_(Note.project_id.is_(None), Note.project_id != all_(b.projects()))))
    return [own, by_project, itself]


def not_assigned_to_others(caller: Caller) -> Any:
    """The WHERE clause for tasks nobody else is to do: assigned to the caller, or to nobody (an
    agenda of the caller's own tasks leaves out those assigned to someone else)."""
    return or_(Note.assignee_id.is_(None), Note.assignee_id == caller.user_id)


def owned_by(model: Any, caller: Caller) -> Any:
    """The WHERE clause for rows the caller owns (their own, never shared: drafts, settings)."""
    return model.user_id == caller.user_id


def owned_rows(table: Any, owner_column: str, caller: Caller) -> Any:
    """:func:`owned_by` for a table named at run time by its owner column (``user_id``, or
    ``owner_id`` for shares): the whole-account export reads every table this way."""
    return table.c[owner_column] == caller.user_id


def of_user(model: Any, user_id: Any) -> Any:
    """The WHERE clause for the rows of one account (``user_id`` a value or a column)."""
    return model.user_id == user_id


def owner_column_is(column: Any, user_id: Any) -> Any:
    """A table's owner ``column`` (``user_id``, ``owner_id``, ``created_by``) is ``user_id``: the
    rows of one account a backup of it holds, for tables known only by their metadata."""
    return column == user_id


def same_owner(model: Any, row: Any) -> Any:
    """The WHERE clause for rows of ``row``'s owner (``row`` an entity with a ``user_id``)."""
    return model.user_id == row.user_id


def belongs_to(owner_id: int | None, user_id: int) -> bool:
    """Whether something held in memory (a live answer's buffer, a cached session) whose owner
    is ``owner_id`` is user ``user_id``'s."""
    return owner_id is not None and owner_id == user_id


def same_space(owner_id: int | None, other_owner_id: int) -> bool:
    """Whether a row of ``other_owner_id`` may sit with (in, under) one of ``owner_id`` (None: a
    note not stored yet, which joins it): a note lives among its owner's projects and notes."""
    return owner_id is None or owner_id == other_owner_id


def owner_sql(alias: str, param: str) -> str:
    """The owner predicate in hand-written SQL: ``alias.user_id = :param``."""
    return f"{alias}.user_id = :{param}"


def owned_by_param(model: Any, caller: Caller | None = None) -> Any:
    """:func:`owned_by` as a named bind parameter (:data:`OWNER_PARAM`), for statements built
    once and run for many callers (without a ``caller`` here, the parameter is required)."""
    owner: BindParameter[int] = bindparam(OWNER_PARAM) if caller is None else bindparam(OWNER_PARAM, caller.user_id)
    return model.user_id == owner


# --- one row ----------------------------------------------------------------------------------


def visible_row(model: Any, *columns: Any) -> Select[Any]:
    """``SELECT columns`` of the one note :data:`ROW_PARAM`, whoever owns it, with the caller's
    (:data:`OWNER_PARAM`) level on it and, when it is someone else's, the owner's name: a
    statement to build once and run with :func:`fetch_visible`. One round trip for everyone:
    the share lookup runs only for a note that is not the caller's."""
    caller: Any = bindparam(OWNER_PARAM)
    mine = model.user_id == caller
    shared = select(_LEVEL_SQL).where(or_(Share.note_id == model.id, Share.project_id == model.project_id),
                                      shares_to(caller)).scalar_subquery()
    owner = select(User.username).where(User.id == model.user_id).scalar_subquery()
    return select(*columns, case((mine, LEVELS["owner"]), else_=shared).label("_level"),
                  case((mine, None), else_=owner).label("_owner_name")).where(model.id == bindparam(ROW_PARAM))


async def fetch_visible(session: AsyncSession, statement: Select[Any], model: Any, row_id: int,
                        caller: Caller) -> tuple[Row[Any], dict[str, str]]:
    """Run a :func:`visible_row` statement as a plain row (no ORM entity), or raise NotFound
    as :func:`get_visible` does; with, for someone else's row, its ``owner`` and the caller's
    ``permission``."""
    result = await (await session.connection()).execute(statement, {ROW_PARAM: row_id, OWNER_PARAM: caller.user_id})
    row = result.first()
    if row is None or not row._level:
        raise _not_found(model, row_id)
    if row._level == LEVELS["owner"]:
        return row, {}
    return row, {"owner": row._owner_name, "permission": _NAMES[row._level]}


async def get_visible(
    session: AsyncSession, model: type[M], row_id: int, caller: Caller, *, for_update: bool = False,
    need: Permission = "viewer",
) -> M:
    """Load one row the caller may read (NotFound otherwise, naming what was asked for) and,
    with ``need``, may change that way (Forbidden, saying what they may do)."""
    stmt = select(model).where(model.id == row_id)
    if for_update:
        stmt = stmt.with_for_update()
    row = (await session.execute(stmt)).scalar_one_or_none()
    if row is None:
        raise _not_found(model, row_id)
    await require(session, caller, row, need)
    return row


async def require(session: AsyncSession, caller: Caller, row: Any, need: Permission = "viewer") -> None:
    """NotFound unless the caller may read ``row`` (loaded by other means); Forbidden unless
    they may also do what ``need`` asks."""
    if row.user_id == caller.user_id and not isinstance(row, TaskLog):
        return
    have = await _level(session, caller, row)
    if not have:
        raise _not_found(type(row), row.id)
    if have < LEVELS[need]:
        raise _forbidden(type(row), row.id, have, need)


async def check_delete_note(session: AsyncSession, caller: Caller, note: Note) -> None:
    """Forbidden unless the caller may delete ``note``: its owner, an editor (or better) of its
    project (notes and tasks are the content of a shared project), or an admin of the note."""
    if note.user_id == caller.user_id:
        return
    reach = await reach_of(session, caller)
    by_project = reach.projects.get(note.project_id, 0) if note.project_id is not None else 0
    if by_project >= LEVELS["editor"] or reach.note_level(note.user_id, note.id, note.project_id) >= LEVELS["admin"]:
        return
    raise _forbidden(Note, note.id, reach.note_level(note.user_id, note.id, note.project_id), "admin")


async def may(session: AsyncSession, caller: Caller, row: Any) -> Permission:
    """The caller's permission on a row they can read (``owner`` for their own)."""
    have = await _level(session, caller, row)
    return permission_name(have) if have else "viewer"


async def _level(session: AsyncSession, caller: Caller, row: Any) -> int:
    if isinstance(row, TaskLog):  # a work log: its task's level; its author keeps reading it
        note = await session.get(Note, row.note_id)
        return 0 if note is None else await _level(session, caller, note)
    if row.user_id == caller.user_id:
        return LEVELS["owner"]
    reach = await reach_of(session, caller)
    if reach.alone:
        return 0
    if isinstance(row, Note):
        return reach.note_level(row.user_id, row.id, row.project_id)
    if isinstance(row, Project):
        return reach.project_level(row.user_id, row.id)
    if isinstance(row, Milestone):
        return reach.projects.get(row.project_id, 0)
    if isinstance(row, NoteVersion):
        note = await session.get(Note, row.note_id)
        return 0 if note is None else reach.note_level(note.user_id, note.id, note.project_id)
    return 0


def _not_found(model: Any, row_id: int) -> NotFound:
    kind = _KINDS.get(model.__tablename__, model.__tablename__)
    return NotFound(f"{kind} {row_id} not found", **{f"{kind.replace(' ', '_')}_id": row_id})


def _forbidden(model: Any, row_id: int, have: int, need: Permission) -> Forbidden:
    kind = _KINDS.get(model.__tablename__, model.__tablename__)
    doing = {"editor": "change", "admin": "delete or reshare", "owner": "do this to"}.get(need, "change")
    return Forbidden(f"{kind} {row_id} is shared with you as {_NAMES[have]}: you may not {doing} it",
                     permission=_NAMES[have], needs=need)


async def can_read(session: AsyncSession, user_id: int, kind: Literal["note", "project"], row_id: int) -> bool:
    """Whether user ``user_id`` may read note or project ``row_id`` now (a change to it is
    theirs to hear of)."""
    row = await session.get(Note if kind == "note" else Project, row_id)
    return row is not None and await _level(session, Caller(user_id=user_id), row) > 0


async def may_change_note(session: AsyncSession, user_id: int, *, owner_id: int, note_id: int | None,
                          project_id: int | None) -> bool:
    """Whether user ``user_id`` may change a note of ``owner_id`` (``note_id`` None: one not
    stored yet) in project ``project_id``: its owner, or an editor or admin of it or its project
    (who a task may be assigned to)."""
    if user_id == owner_id:
        return True
    reach = await reach_of(session, Caller(user_id=user_id))
    return reach.note_level(owner_id, note_id or 0, project_id) >= LEVELS["editor"]


async def visible_ids(session: AsyncSession, model: Any, ids: list[int], caller: Caller) -> set[int]:
    """Which of ``ids`` the caller may read."""
    reach = await reach_of(session, caller)
    rows = await session.execute(select(model.id).where(model.id.in_(ids), readable(model, reach)))
    return set(rows.scalars())
