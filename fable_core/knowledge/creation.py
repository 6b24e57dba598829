"""Storing new notes: the row, its first version, its links, and the links waiting for its title.

Every new note gets the same things, however it is made: ``create_note`` (one note),
``import_notes`` (a batch) and a recurring task's next occurrence all store notes through here.

- :func:`new_row` turns the fields into a ``notes`` row (task fields imply a task, a done task
  is stamped, the title key is computed).
- :func:`insert_note` stores one row in one statement: data-modifying CTEs insert the note,
  its first version and its outgoing ``[[links]]`` (resolved against existing titles, or to the
  note itself), point the links waiting for its title at it and add its words to the owner's
  vocabulary (:mod:`.vocabulary`); the statement returns the note's summary. Creating a note
  is a hot path (agents write notes one call at a time), and one prebuilt statement costs a
  fraction of the ORM's flush, snapshot and link queries.
- :func:`insert_notes` stores a batch with one statement per table; links may point at notes
  of the same batch, so they are resolved after the notes exist.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import Integer, Text, bindparam, case, func, insert, literal, select, true, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.hashtags import text_tags, with_text_tags
from fable_core.db.models import Note, NoteLink, NoteVersion, alias_keys, title_key
from fable_core.knowledge import vocabulary, wikilinks
from fable_core.knowledge.image_refs import add_image_refs
from fable_core.tools.access import of_user

__all__ = ["insert_note", "insert_notes", "new_row"]

# The columns of a new ``notes`` row, as :func:`new_row` gives them.
_COLUMNS = ("user_id", "title", "title_key", "body", "tags", "status", "priority", "due_date",
            "recurrence_rule", "version", "project_id", "milestone_id", "parent_id", "completed_at",
            "entity", "fields", "alias_keys", "inline_tags", "assignee_id")
_VERSION_COLUMNS = ("note_id", "user_id", "version", "title", "body", "tags", "body_length", "fields")
_LINK_COLUMNS = ("user_id", "source_id", "target_id", "target_key", "target_title")


def new_row(
    user_id: int,
    title: str,
    body: str = "",
    tags: list[str] | None = None,
    *,
    status: str | None = None,
    priority: str | None = None,
    due_date: date | None = None,
    recurrence_rule: str | None = None,
    project_id: int | None = None,
    milestone_id: int | None = None,
    parent_id: int | None = None,
    now: datetime | None = None,
    entity: str | None = None,
    fields: dict[str, Any] | None = None,
    assignee_id: int | None = None,
) -> dict[str, Any]:
    """The ``notes`` row of a new note: a priority, due date or recurrence makes it a task
    (status todo), a done one is stamped completed ``now``; an ``entity`` (person, place, list)
    with its ``fields`` makes it a structured note; the body's ``#tags`` join its tags
    (:mod:`fable_core.db.hashtags`)."""
    if status is None and (priority or due_date or recurrence_rule):
        status = "todo"
    inline = text_tags(body)
    return {
        "user_id": user_id, "title": title, "title_key": title_key(title), "body": body,
        "tags": with_text_tags(tags or [], inline), "inline_tags": inline, "status": status,
        "priority": priority, "due_date": due_date, "recurrence_rule": recurrence_rule, "version": 1,
        "project_id": project_id, "milestone_id": milestone_id, "parent_id": parent_id,
        "completed_at": (now or datetime.now(UTC)) if status == "done" else None,
        "entity": entity, "fields": fields, "alias_keys": alias_keys(body), "assignee_id": assignee_id,
    }


async def insert_note(session: AsyncSession, row: dict[str, Any], *, writer: int | None) -> dict[str, Any]:
    """Store one new note (``row`` from :func:`new_row`) with its first version and links, and
    its image embeds as ``writer``'s (None: the caller records them); returns its summary (the
    fields of ``NoteSummary``)."""
    links = wikilinks.parse_links(row["body"])
    params = {f"new_{column}": value for column, value in row.items()}
    params["names"] = [row["title_key"], *(row["alias_keys"] or [])]  # what links to it may say
    if links:
        params["link_keys"], params["link_titles"] = list(links), list(links.values())
    statement = _INSERT_ONE[bool(links)]
    result = await (await session.connection()).execute(statement, params)
    summary = dict(zip(result.keys(), result.one(), strict=True))
    if writer is not None and "/api/images/" in row["body"]:
        await add_image_refs(session, [(summary["id"], row["body"])], writer)
    return summary


_NAMES = bindparam("names", type_=ARRAY(Text))
"""The new note's title key and alias keys."""


def _insert_one_statement(with_links: bool) -> Any:
    """The statement of :func:`insert_note`; every value is a bind parameter (``new_`` and its
    column: a parameter named like a column of the UPDATE below would be added to its SET), so
    it is built once and run for every note."""
    columns = Note.__table__.c
    values = {c: bindparam(f"new_{c}", type_=columns[c].type) for c in _COLUMNS}
    new = (insert(Note).values(values)
           .returning(*(columns[c] for c in ("id", *_COLUMNS, "updated_at"))).cte("new"))
    version = insert(NoteVersion).from_select(
        _VERSION_COLUMNS,
        select(new.c.id, new.c.user_id, new.c.version, new.c.title, new.c.body, new.c.tags,
               func.length(new.c.body), new.c.fields),
    ).cte("first_version")
    # links waiting for this title; the links inserted below are not among them (a statement's
    # CTEs all see the table as it was before it), so a link to itself is resolved there
    waiting = (update(NoteLink)
               .where(of_user(NoteLink, bindparam("new_user_id")), NoteLink.target_id.is_(None),
                      NoteLink.target_key == func.any(_NAMES))
               .values(target_id=select(new.c.id).scalar_subquery()).cte("waiting"))
    ctes = [version, waiting, vocabulary.add_cte(new)]
    if with_links:
        ctes.append(_outgoing_links(new))
    kind = func.coalesce(new.c.entity, case((new.c.status.is_(None), "note"), else_="task")).label("kind")
    return select(
        new.c.id, new.c.title, kind, new.c.tags, new.c.status, new.c.priority, new.c.due_date,
        new.c.project_id, new.c.milestone_id, new.c.parent_id, new.c.recurrence_rule, new.c.version,
        new.c.updated_at,
    ).add_cte(*ctes)


def _outgoing_links(new: Any) -> Any:
    """INSERT of the new note's links (``link_keys`` → ``link_titles``), each pointing at the
    oldest of the owner's notes with that title (or alias), else at the new note if it is its own
    title or alias."""
    pairs = func.unnest(bindparam("link_keys", type_=ARRAY(Text)), bindparam("link_titles", type_=ARRAY(Text)))
    wanted = pairs.table_valued("key", "title").render_derived("wanted")
    existing = wikilinks.link_target(new.c.user_id, wanted.c.key)
    target = func.coalesce(existing, case((wanted.c.key == func.any(_NAMES), new.c.id)))
    rows = select(new.c.user_id, new.c.id, target, wanted.c.key, wanted.c.title)
    return insert(NoteLink).from_select(
        _LINK_COLUMNS, rows.select_from(new).join(wanted, true())).cte("links")


# insert_note's statement, without and with outgoing links
_INSERT_ONE = {False: _insert_one_statement(False), True: _insert_one_statement(True)}


async def insert_notes(session: AsyncSession, user_id: int, rows: list[dict[str, Any]], *, writer: int) -> list[int]:
    """Store a batch of new notes (rows from :func:`new_row`, titles distinct by key) with their
    first versions, links, words and image embeds (``writer``'s), and resolve the links waiting
    for their titles; returns their ids."""
    ids = list((await session.execute(
        insert(Note).returning(Note.id, sort_by_parameter_order=True), rows)).scalars().all())
    stored = list(zip(ids, rows, strict=True))
    await session.execute(insert(NoteVersion), [
        {"note_id": note_id, "user_id": user_id, "version": 1, "title": r["title"],
         "body": r["body"], "tags": r["tags"], "body_length": len(r["body"]), "fields": r.get("fields")}
        for note_id, r in stored])
    await _link(session, user_id, [(note_id, [r["title_key"], *(r.get("alias_keys") or [])], r["body"])
                                   for note_id, r in stored])
    await add_image_refs(session, ((note_id, r["body"]) for note_id, r in stored), writer)
    await vocabulary.add(session, ids)
    return ids


async def _link(s: AsyncSession, user_id: int, new: list[tuple[int, list[str], str]]) -> None:
    """Links of the new notes (to old and new titles), and old links waiting for a new title;
    ``new`` holds each note's id, names (its title key, then its alias keys) and body."""
    outgoing = [(note_id, wikilinks.parse_links(body)) for note_id, _, body in new]
    wanted = list({key for _, links in outgoing for key in links})
    targets: dict[str, int] = {}
    if wanted:  # this batch's notes are among the targets: they were inserted above
        keys = func.unnest(_texts(wanted)).table_valued("key").render_derived("wanted")
        rows = await s.execute(select(keys.c.key, wikilinks.link_target(user_id, keys.c.key)))
        targets = {key: note_id for key, note_id in rows if note_id is not None}
    links = [
        {"user_id": user_id, "source_id": note_id, "target_id": targets.get(key), "target_key": key,
         "target_title": title}
        for note_id, found in outgoing for key, title in found.items()
    ]
    if links:
        await s.execute(insert(NoteLink), links)
    first_by_key: dict[str, int] = {}
    for note_id, names, _ in new:  # a title before any alias
        first_by_key.setdefault(names[0], note_id)
    for note_id, names, _ in new:
        for key in names[1:]:
            first_by_key.setdefault(key, note_id)
    new_keys = _texts(list(first_by_key))
    waiting = func.unnest(new_keys, _ints(list(first_by_key.values()))).table_valued(
        "key", "note_id").render_derived("titled")
    await s.execute(
        update(NoteLink)
        # ``= ANY`` as well as the join: it lets the planner use the index of unresolved links
        # whatever its (possibly stale, after a bulk load) idea of how many links there are
        .where(of_user(NoteLink, user_id), NoteLink.target_id.is_(None),
               NoteLink.target_key == func.any(new_keys), NoteLink.target_key == waiting.c.key)
        .values(target_id=waiting.c.note_id)
    )


def _ints(values: list[int]) -> object:
    return literal(values, ARRAY(Integer))


def _texts(values: list[str]) -> object:
    return literal(values, ARRAY(Text))
