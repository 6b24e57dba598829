"""``[[Title]]`` and ``[[Title|label]]`` links between notes, kept in ``note_links``.

Links are matched on a title *key* (``fable_core.db.models.title_key``: case-folded words),
so ``[[Project: Alpha]]`` finds "project alpha".
A link to a title that does not exist yet is stored unresolved and resolves when a note with
that title appears. A note also answers to the ``aliases`` of its front matter
(``Note.alias_keys``), when no note has the name as its title. Renaming a note rewrites the
links to its title in the linking notes' bodies, so its backlinks survive and the text stays
true.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import Text, and_, delete, func, insert, literal, select, update
from sqlalchemy.dialects.postgresql import ARRAY, array
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import Note, NoteLink, title_key
from fable_core.knowledge.codespans import prose
from fable_core.knowledge.matching import same_key
from fable_core.tools.access import of_user, same_owner

__all__ = ["has_alias", "is_file_name", "link_target", "parse_links", "rename_links", "resolve_pending",
           "split_target", "sync_aliases", "sync_links", "title_key"]

_LINK = re.compile(r"\[\[([^\[\]|\n]{1,300})(?:\|([^\[\]\n]{0,300}))?\]\]")
_EMBED_OR_LINK = re.compile(r"(!?)\[\[([^\[\]|\n]{1,300})(?:\|([^\[\]\n]{0,300}))?\]\]")
_FILE = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,4}$")


def is_file_name(target: str) -> bool:
    """Whether a link's target names a file other than a note (``pic.png``, ``paper.pdf``)."""
    return _FILE.search(target.strip()) is not None and not target.strip().lower().endswith(".md")


def split_target(target: str) -> tuple[str, str | None]:
    """``Note#Heading`` → ``("Note", "Heading")``: a link's note title and the heading it opens at
    (Obsidian's spelling). A ``#`` with nothing after it is part of the title (``[[C#]]``)."""
    title, mark, heading = target.rpartition("#")
    if not mark or not heading.strip():
        return target.strip(), None
    return title.strip(), heading.strip()


def parse_links(body: str) -> dict[str, str]:
    """Map of title key → title as written, for each distinct link target in ``body``: in its
    prose (``[[Note]]`` in code is an example, :mod:`.codespans`), and not the embed of a file
    (``![[diagram.svg]]``, ``![[paper.pdf#page=3]]``: an attachment, not a note)."""
    found: dict[str, str] = {}
    for match in _EMBED_OR_LINK.finditer(prose(body)):
        title = split_target(match.group(2))[0]
        if match.group(1) and is_file_name(title):
            continue
        key = title_key(title)
        if key and key not in found:
            found[key] = title
    return found


def link_target(user_id: Any, key: Any) -> Any:
    """The note a link to title key ``key`` points at: the owner's oldest note with that title,
    else the oldest that has it as an alias (NULL if none), as a scalar expression. ``GROUP BY``
    keeps PostgreSQL from turning ``min(id)`` into a walk of the primary key in id order, which
    looks cheap and reads every note; ``coalesce`` asks the aliases only when no title answers."""
    titled = (select(func.min(Note.id)).where(of_user(Note, user_id), same_key(Note.title_key, key))
              .group_by(Note.title_key).scalar_subquery())
    return func.coalesce(titled, _alias_target(user_id, key))


def _alias_target(user_id: Any, key: Any) -> Any:
    return (select(func.min(Note.id))
            .where(has_alias(key), of_user(Note, user_id)).scalar_subquery())


def has_alias(key: Any) -> Any:
    """Whether a note has title key ``key`` among its aliases (through their GIN index)."""
    return and_(Note.alias_keys.is_not(None), Note.alias_keys.op("@>")(array([key])))


async def sync_links(session: AsyncSession, note: Note) -> None:
    """Make ``note``'s outgoing links match its body, resolving each against existing titles."""
    await session.execute(delete(NoteLink).where(NoteLink.source_id == note.id))
    links = parse_links(note.body)
    if not links:
        return
    wanted = func.unnest(literal(list(links), ARRAY(Text))).table_valued("key").render_derived("wanted")
    rows = await session.execute(select(wanted.c.key, link_target(note.user_id, wanted.c.key)))
    targets: dict[str, int] = dict(rows.all())
    await session.execute(
        insert(NoteLink),
        [
            {
                "user_id": note.user_id,
                "source_id": note.id,
                "target_id": targets.get(key),
                "target_key": key,
                "target_title": title,
            }
            for key, title in links.items()
        ],
    )


async def resolve_pending(session: AsyncSession, note: Note) -> None:
    """Point unresolved links whose key matches ``note``'s title or one of its aliases at ``note``."""
    keys = [title_key(note.title), *(note.alias_keys or [])]
    await session.execute(
        update(NoteLink)
        .where(
            same_owner(NoteLink, note),
            NoteLink.target_id.is_(None),
            NoteLink.target_key.in_(keys) if len(keys) > 1 else NoteLink.target_key == keys[0],
        )
        .values(target_id=note.id)
    )


async def sync_aliases(session: AsyncSession, note: Note) -> None:
    """After ``note``'s aliases changed: the links that found it by a name it no longer has find
    whichever note has that name now (or none), and the links waiting for its new names find it."""
    keys = [title_key(note.title), *(note.alias_keys or [])]
    await session.execute(
        update(NoteLink)
        .where(NoteLink.target_id == note.id, NoteLink.target_key.not_in(keys))
        .values(target_id=link_target(NoteLink.user_id, NoteLink.target_key))
    )
    if note.alias_keys:
        await resolve_pending(session, note)


async def rename_links(session: AsyncSession, note: Note, old_title: str) -> list[Note]:
    """After a rename, rewrite ``[[old]]`` to ``[[new]]`` in linking notes; returns them."""
    old_key, new_key = title_key(old_title), title_key(note.title)
    if old_key == new_key:
        return []
    sources = (
        await session.execute(
            select(Note)
            .join(NoteLink, and_(NoteLink.source_id == Note.id, NoteLink.target_id == note.id,
                                 NoteLink.target_key == old_key))
            .where(same_owner(Note, note), Note.id != note.id)
        )
    ).scalars().unique().all()

    def rewrite(match: re.Match[str]) -> str:
        title, heading = split_target(match.group(1))
        if title_key(title) != old_key:
            return match.group(0)
        target = f"{note.title}#{heading}" if heading else note.title
        label = match.group(2)
        return f"[[{target}|{label}]]" if label is not None else f"[[{target}]]"

    for source in sources:
        source.body = _LINK.sub(rewrite, source.body)
    await session.execute(  # the links by an alias still use it
        update(NoteLink)
        .where(NoteLink.target_id == note.id, NoteLink.target_key == old_key)
        .values(target_key=new_key, target_title=note.title)
    )
    await session.flush()
    return list(sources)
