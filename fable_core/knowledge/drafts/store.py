"""Persistence of edit drafts: put (upsert), load and forget one person's draft of a note, or of
the note they have not created yet (``note_id`` None). Callers check the note first: a draft is
only ever the caller's own (:func:`fable_core.tools.access.owned_by`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func, literal_column, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import EditDraft
from fable_core.tools.access import owned_by
from fable_core.tools.caller import Caller

__all__ = ["forget", "load", "put"]


# the unique index's expression, with its 0 written in the statement: a bound 0 would not match
# the index once PostgreSQL plans the prepared statement generically (from its sixth run)
_NOTE_KEY = func.coalesce(EditDraft.note_id, literal_column("0"))


def _which(caller: Caller, note_id: int | None) -> Any:
    note = EditDraft.note_id.is_(None) if note_id is None else EditDraft.note_id == note_id
    return owned_by(EditDraft, caller) & note


async def put(session: AsyncSession, caller: Caller, note_id: int | None, *, title: str, body: str,
              tags: list[str], base_version: int | None) -> EditDraft:
    """Store the caller's draft of ``note_id``, replacing the one before (one statement)."""
    values = {"title": title, "body": body, "tags": tags, "base_version": base_version, "updated_at": func.now()}
    statement = (
        insert(EditDraft).values(user_id=caller.user_id, note_id=note_id, **values)
        .on_conflict_do_update(index_elements=[EditDraft.user_id, _NOTE_KEY], set_=values)
        .returning(EditDraft)
    )
    return (await session.execute(statement)).scalar_one()


async def load(session: AsyncSession, caller: Caller, note_id: int | None) -> EditDraft | None:
    return (await session.execute(select(EditDraft).where(_which(caller, note_id)))).scalar_one_or_none()


async def forget(session: AsyncSession, caller: Caller, note_id: int | None) -> bool:
    """Delete the caller's draft of ``note_id``; whether there was one."""
    result = await session.execute(delete(EditDraft).where(_which(caller, note_id)).returning(EditDraft.id))
    return result.first() is not None
