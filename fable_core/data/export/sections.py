"""What the JSON export holds: one section per kind of row a user owns, and what it leaves out.

Every table with a ``user_id`` (or ``owner_id``) column is either a :data:`SECTIONS` entry or in
:data:`LEFT_OUT` with its reason (a test holds the two to the schema, so a new table is decided,
not forgotten). A section's rows are its table's columns less the owner column and the columns
PostgreSQL derives (search vectors, keys), in primary-key order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Column, Table
from sqlalchemy.dialects.postgresql import TSVECTOR

from fable_core.db import models as m

__all__ = ["LEFT_OUT", "SECTIONS", "Section"]


@dataclass(frozen=True, slots=True)
class Section:
    name: str
    model: Any
    owner: str = "user_id"
    omit: tuple[str, ...] = ()

    @property
    def table(self) -> Table:
        table: Table = self.model.__table__
        return table

    @property
    def columns(self) -> list[Column[Any]]:
        return [c for c in self.table.columns
                if c.name != self.owner and c.name not in self.omit and c.computed is None
                and not isinstance(c.type, TSVECTOR)]


SECTIONS: tuple[Section, ...] = (
    Section("settings", m.Setting),
    Section("projects", m.Project),
    Section("milestones", m.Milestone),
    Section("notes", m.Note, omit=("title_key", "alias_keys", "inline_tags")),
    Section("note_versions", m.NoteVersion),
    Section("note_drafts", m.NoteDraft),
    Section("edit_drafts", m.EditDraft),
    Section("work_logs", m.TaskLog),
    Section("conversations", m.Conversation),
    Section("messages", m.Message),
    Section("events", m.CalendarEvent),
    Section("event_versions", m.EventVersion),
    Section("moments", m.Moment),
    Section("journal_days", m.JournalDay, omit=("lease_until", "attempts", "retry_at")),  # the prep's coordination
    Section("profile", m.Profile),
    Section("profile_observations", m.ProfileObservation),
    Section("feeds", m.Feed),
    Section("feed_items", m.FeedItem),
    Section("images", m.Image),
    Section("research_runs", m.ResearchRun),
    Section("notifications", m.Notification),
    Section("shares", m.Share, owner="owner_id"),
)

LEFT_OUT: dict[str, str] = {
    "login_sessions": "credentials",
    "api_keys": "credentials",
    "oauth_grants": "credentials (the clients a person approved, shown in Settings)",
    "account_tokens": "credentials",
    "push_subscriptions": "a browser's endpoint and keys",
    "caldav_accounts": "holds the sealed CalDAV password",
    "user_identities": "sign-in links to an identity provider (credentials)",
    "imported_items": "where imported notes came from: bookkeeping for re-running an import",
    "note_words": "derived (search vocabulary)",
    "generations": "transient: the answers being written right now, on whichever replica",
    "generation_events": "transient: a live answer's events, kept a minute after it ends",
    "idempotent_calls": "transient: write results kept two days for clients that retry with the same key",
    "embedding_failures": "embeddings given up after crashing the database: bookkeeping, counted again if it recurs",
    "note_images": "derived (the image embeds in note bodies, with who wrote each)",
    "note_embeddings": "derived (rebuilt from notes)",
    "note_links": "derived (the wikilinks in note bodies)",
    "weather_forecasts": "a cache",
    "event_tombstones": "sync bookkeeping",
    "app_logs": "logs, not data",
    "group_members": "group membership belongs to the group",
    "trashed_notes": "deleted notes (restore one from the trash to export it)",
}


def _type(column: Column[Any]) -> dict[str, Any]:
    try:
        python = column.type.python_type
    except NotImplementedError:
        python = object
    kind: dict[str, Any]
    if python is bool:
        kind = {"type": "boolean"}
    elif python is int:
        kind = {"type": "integer"}
    elif python is float or python.__name__ == "Decimal":
        kind = {"type": "number"}
    elif python.__name__ == "datetime":
        kind = {"type": "string", "format": "date-time"}
    elif python.__name__ == "date":
        kind = {"type": "string", "format": "date"}
    elif python is str:
        kind = {"type": "string"}
    elif python is list:
        kind = {"type": "array"}
    else:
        kind = {}  # JSON of any shape (JSONB columns)
    if kind and column.nullable:
        kind = {"type": [kind["type"], "null"], **{k: v for k, v in kind.items() if k != "type"}}
    return kind


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the export document (``docs/export.schema.json`` is its copy)."""
    sections = {
        s.name: {"type": "array", "items": {
            "type": "object", "additionalProperties": False,
            "properties": {c.name: _type(c) for c in s.columns},
        }} for s in SECTIONS
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Fable export",
        "type": "object",
        "required": ["format", "version", "exported_at", "user", *sections, "rows", "complete"],
        "properties": {
            "format": {"const": "fable-export"},
            "version": {"const": 1},
            "exported_at": {"type": "string", "format": "date-time"},
            "user": {"type": "object", "properties": {"id": {"type": "integer"}, "username": {"type": "string"}}},
            **sections,
            "rows": {"type": "object", "description": "Rows per section: written after the last section",
                     "properties": {s.name: {"type": "integer"} for s in SECTIONS}},
            "complete": {"const": True, "description": "The last key: a document without it was cut short"},
        },
    }


if __name__ == "__main__":
    import json
    import sys
    from pathlib import Path

    text = json.dumps(json_schema(), indent=2) + "\n"
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
