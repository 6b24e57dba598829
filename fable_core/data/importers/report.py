"""What an import reports, and the provenance it keeps (``imported_items``)."""

from __future__ import annotations

from pydantic import BaseModel, Field
from sqlalchemy import Text, literal, select
from sqlalchemy.dialects.postgresql import ARRAY, insert
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import Conversation, ImportedItem, Note
from fable_core.tools.access import of_user
from fable_core.tools.results import absent_when_none

__all__ = ["LISTED", "ImportReport", "ItemLine", "already_imported", "record"]

LISTED = 200
"""Lines of each list a report shows; the counts cover everything."""


class ItemLine(BaseModel):
    item: str = Field(description="The file's vault-relative path, or the conversation's id.")
    title: str | None = absent_when_none()
    id: int | None = absent_when_none(description="The created (or existing) note or conversation.")
    reason: str | None = absent_when_none()


class ImportReport(BaseModel):
    dry_run: bool
    created: int = Field(description="Items created (dry run: that would be created).")
    skipped: int
    images: int = Field(0, description="Attachments stored in the image store (dry run: that would be).")
    created_items: list[ItemLine] = Field(description=f"The first {LISTED} created items.")
    skipped_items: list[ItemLine] = Field(description=f"The first {LISTED} skipped items, each with why.")
    warnings: list[ItemLine] = Field(default_factory=list, description="Imported, with a problem noted.")


_TABLES = {"note": Note, "conversation": Conversation}


async def already_imported(s: AsyncSession, user_id: int, source: str, kind: str, keys: list[str]) -> dict[str, int]:
    """Key → item id of the keys imported before whose item still exists."""
    if not keys:
        return {}
    table = _TABLES[kind]
    rows = await s.execute(
        select(ImportedItem.source_key, ImportedItem.item_id)
        .join(table, table.id == ImportedItem.item_id)  # type: ignore[attr-defined]
        .where(of_user(ImportedItem, user_id), ImportedItem.source == source,
               ImportedItem.source_key == literal(keys, ARRAY(Text)).any_()))
    return dict(rows.all())


async def record(s: AsyncSession, user_id: int, source: str, kind: str, items: list[tuple[str, int]]) -> None:
    """Remember where each new item came from (replacing a key whose old item was deleted)."""
    if not items:
        return
    statement = insert(ImportedItem)
    await s.execute(
        statement.on_conflict_do_update(
            constraint="uq_imported_items_key",
            set_={"item_id": statement.excluded.item_id, "item_kind": statement.excluded.item_kind}),
        [{"user_id": user_id, "source": source, "source_key": key, "item_kind": kind, "item_id": item_id}
         for key, item_id in items])


