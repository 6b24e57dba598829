"""The backup archive: one versioned ZIP, written and read table by table.

``manifest.json`` carries the format version, Fable's version, when it was made, its scope
(``instance`` or ``user``) and, per table, the member's name, its columns, its row count and the
SHA-256 of its bytes. Each table is one JSON-lines member (``tables/<name>.jsonl``): one JSON
array a row, in the member's column order.

Which tables go in is decided from ``Base.metadata``: every table is either in :data:`COVERED`
or in :data:`EXCLUDED` with its reason (a test fails on a table that is neither). Generated
columns (search vectors) never go in; embeddings only when asked (the embedding workers
backfill the rest).

Restore is all-or-nothing in the caller's one transaction and always REMAPS ids: every row with
an ``id`` gets a fresh one from its sequence and every foreign key is rewritten through the maps
(into an empty instance the fresh ids are the old ones, give or take gaps). A user who already
exists by username is mapped onto: the archive's rows join that account. A reference whose
target is not in the archive (another account, in a user's own archive) becomes NULL where the
foreign key is ON DELETE SET NULL, and otherwise leaves its row out, as a cascade would. A clash
with an existing row is a Conflict and nothing is written.

Ids also live outside foreign keys, and are remapped there too: an image's URL
(``/api/images/<id>``) in any text (a note's body, a version's, a message's) and ids inside JSON
values. Every JSON column of a covered table is either in :data:`JSON_IDS` (remapped by the key
names of :data:`ID_KEYS`) or in :data:`JSON_ID_FREE` with its reason (a test fails on one that is
neither).

With ``data_dir``, the image files go in too (``images/<sha256>``, stored, each checksummed by its
name and listed in the manifest's ``images``) and a restore writes them back into the store
(atomically, each distinct file once; files it wrote are removed again when the restore fails).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import re
import shutil
import zipfile
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import IO, Any, Literal

import anyio
from pgvector.sqlalchemy import Vector
from sqlalchemy import Column, Date, DateTime, String, Table, bindparam, func, insert, null, select, text, update
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.errors import log_db_error
from fable_core.db.models import Base
from fable_core.errors import Conflict, InvalidInput
from fable_core.knowledge.image_refs import rebuild_image_refs
from fable_core.outside.images import store
from fable_core.outside.images.sniff import NotAnImage, sniff
from fable_core.tools.access import owner_column_is

__all__ = ["COVERED", "EXCLUDED", "FORMAT", "ID_KEYS", "JSON_IDS", "JSON_ID_FREE", "Scope", "Summary", "owner_here",
           "read_archive", "restore", "write_archive"]

FORMAT = 2
READS = frozenset({1, 2})  # 1: the same, without image files
Scope = Literal["instance", "user"]
BATCH = 1000

EXCLUDED: dict[str, str] = {
    "login_sessions": "sessions: everyone signs in again",
    "rate_limit_hits": "transient counters",
    "account_tokens": "one-time invitation and reset tokens",
    "weather_forecasts": "a cache, fetched again",
    "oauth_clients": "OAuth clients register again with the restored Fable (at its own public URL)",
    "oauth_grants": "OAuth connections are credentials: people approve their clients again",
    "oauth_codes": "single-use OAuth authorization codes",
    "oauth_tokens": "OAuth access and refresh tokens are credentials",
    "imported_items": "import provenance names its note or conversation by a bare id a restore cannot remap; "
                      "a later re-import falls back on the importers' title rules",
    "trashed_notes": "deleted notes awaiting their purge: their JSON names ids (the note's, its project's) "
                     "a restore cannot remap; restore a note from the trash to keep it",
    "job_runs": "which scheduled runs this instance has done: the restored one schedules its own",
    "mcp_sessions": "which replica holds which open MCP session: clients open new ones",
    "recent_writes": "who wrote in the last seconds (read replicas' read-your-writes): transient",
    "generations": "transient: the answers being written right now, on whichever process",
    "generation_events": "transient: a live answer's events, kept a minute after it ends",
    "idempotent_calls": "transient: write results kept two days for clients that retry with the same key",
    "embedding_failures": "embeddings given up after crashing the database: bookkeeping, counted again if it recurs",
    "note_images": "which images notes embed and who wrote each embed: counted again from the restored notes, "
                   "as their owners'",
}
COVERED: frozenset[str] = frozenset({
    "instance_settings", "users", "api_keys", "app_logs", "caldav_accounts", "conversations",
    "event_tombstones", "event_versions", "feeds", "groups", "images", "moments", "note_words",
    "notifications", "profile_observations", "profiles", "projects", "push_subscriptions", "settings",
    "group_members", "messages", "milestones", "journal_days", "notes", "events", "feed_items", "note_drafts",
    "note_embeddings", "note_links", "note_versions", "research_runs", "shares", "task_logs", "event_sync_marks",
    "user_identities", "edit_drafts",
})
EMBEDDINGS = frozenset({"note_embeddings"})  # whole tables that are embeddings
MERGED = frozenset({"note_words", "instance_settings"})  # a row already here is kept (this instance's settings)
# not in a user's own archive
INSTANCE_ONLY = frozenset({"instance_settings", "api_keys", "app_logs", "user_identities"})
_OWNER_COLUMNS = ("user_id", "owner_id", "created_by")

ID_KEYS: dict[str, str] = {
    "note_id": "notes", "index_note_id": "notes", "parent_id": "notes", "source_id": "notes", "target_id": "notes",
    "project_id": "projects", "milestone_id": "milestones", "group_id": "groups", "conversation_id": "conversations",
    "message_id": "messages", "event_id": "events", "image_id": "images", "run_id": "research_runs",
    "moment_id": "moments", "feed_id": "feeds", "share_id": "shares", "user_id": "users",
}
"""Inside a remapped JSON value, a key of these names holds an id of that table (at any depth)."""
JSON_IDS: dict[tuple[str, str], str] = {
    ("messages", "tool_events"): "tool calls: their arguments' and results' ids by key name, image URLs",
    ("messages", "context"): "the notes used, suggested or attached to an answer ({id, title})",
    ("notifications", "data"): "what a notification opens: note_id, project_id, group_id, conversation_id",
    ("research_runs", "notes"): "the notes a run wrote ({note_id, title, role})",
}
"""JSON columns whose ids are remapped on restore (by :data:`ID_KEYS`; ``context``'s lists by ``id``)."""
JSON_ID_FREE: dict[tuple[str, str], str] = {
    ("instance_settings", "value"): "registration mode, public URL: no ids",
    ("settings", "value"): "preferences (timezone, names, journal, notifications): no ids",
    ("notes", "fields"): "a person's, place's or list's fields: text, dates, URLs",
    ("note_versions", "fields"): "the fields as they were: text, dates, URLs",
    ("research_runs", "queries"): "search strings",
    ("research_runs", "sources"): "web sources: URLs and titles",
    ("app_logs", "details"): "the audit record says what happened then: its ids are kept as they were",
}
"""JSON columns of covered tables holding no row ids (or, the audit log, deliberately kept as archived)."""
LATE = frozenset({"messages", "notifications"})
"""Restored after every table their JSON names (with the tables that depend on them)."""
_IMAGE_URL = re.compile(r"(?<![\w.:/-])/api/images/(\d+)(?!\d)")
_SHA = re.compile(r"[0-9a-f]{64}")


def tables(*, embeddings: bool) -> list[Table]:
    return [t for t in Base.metadata.sorted_tables
            if t.name in COVERED and (embeddings or t.name not in EMBEDDINGS)]


def _columns(table: Table, *, embeddings: bool) -> list[Column[Any]]:
    return [c for c in table.columns
            if c.computed is None and (embeddings or not isinstance(c.type, Vector))]


@cache
def user_tables() -> frozenset[str]:
    """The tables a user's own archive may hold: those :func:`write_archive` writes for one
    account (never an instance table). A restore of a user's archive refuses any other."""
    chosen: dict[str, Any] = {}
    for table in tables(embeddings=True):
        if table.name not in INSTANCE_ONLY and (where := _scoped(table, 0, chosen)) is not None:
            chosen[table.name] = where
    return frozenset(chosen)


def _owner_column(table: Table) -> str | None:
    """The column naming the account a row belongs to (the one :func:`_scoped` picks by)."""
    if table.name == "users":
        return "id"
    return next((name for name in _OWNER_COLUMNS if name in table.c), None)


def _encode(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if hasattr(value, "tolist"):  # a vector
        return value.tolist()
    raise TypeError(f"cannot archive {type(value).__name__}")


def _scoped(table: Table, account: int, chosen: dict[str, Any]) -> Any:
    """The WHERE clause picking an account's rows of ``table``, or None when it has none."""
    if table.name == "users":
        return table.c.id == account
    for name in _OWNER_COLUMNS:
        if name in table.c:
            return owner_column_is(table.c[name], account)
    for column in table.columns:  # a child of a chosen table: through its key
        for fk in column.foreign_keys:
            parent = fk.column.table
            if parent.name in chosen:
                return column.in_(select(parent.c.id).where(chosen[parent.name]))
    return None


class _Hashing(io.RawIOBase):
    """Counts and hashes what goes through it into the member."""

    def __init__(self, member: IO[bytes]) -> None:
        self.member, self.sha, self.size = member, hashlib.sha256(), 0

    def write(self, data: Any) -> int:
        self.sha.update(data)
        self.size += len(data)
        return self.member.write(data)


async def write_archive(session: AsyncSession, out: IO[bytes], *, scope: Scope, account: int | None = None,
                        embeddings: bool = False, data_dir: Path | None = None) -> dict[str, int]:
    """Write the archive of the instance (or of ``account``'s own data) to ``out``; rows per table
    (and ``image_files``: the image files it carries, with ``data_dir``)."""
    members: dict[str, Any] = {}
    counts: dict[str, int] = {}
    chosen: dict[str, Any] = {}
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=5) as zf:
        for table in tables(embeddings=embeddings):
            where = None
            if scope == "user":
                assert account is not None
                if table.name in INSTANCE_ONLY:
                    continue
                where = _scoped(table, account, chosen)
                if where is None:
                    continue
                chosen[table.name] = where
            columns = _columns(table, embeddings=embeddings)
            stmt = select(*columns)
            if where is not None:
                stmt = stmt.where(where)
            self_refs = [c for c in columns for fk in c.foreign_keys if fk.column.table is table]
            stmt = stmt.order_by(*(c.is_not(None) for c in self_refs), *table.primary_key.columns)
            name = f"tables/{table.name}.jsonl"
            rows = 0
            with zf.open(name, "w", force_zip64=True) as member:
                hashing = _Hashing(member)
                result = await session.stream(stmt.execution_options(yield_per=BATCH))
                async for part in result.partitions():
                    lines = "".join(json.dumps(list(r), default=_encode, ensure_ascii=False, separators=(",", ":"))
                                    + "\n" for r in part)
                    hashing.write(lines.encode())
                    rows += len(part)
            members[table.name] = {"member": name, "columns": [c.name for c in columns], "rows": rows,
                                   "sha256": hashing.sha.hexdigest(), "bytes": hashing.size}
            counts[table.name] = rows
        manifest: dict[str, Any] = {"format": FORMAT, "fable_version": _version(),
                                    "created_at": datetime.now(UTC).isoformat(), "scope": scope,
                                    "embeddings": embeddings, "tables": members}
        if data_dir is not None and "images" in members:
            images = Base.metadata.tables["images"]
            stmt = select(images.c.sha256).distinct().order_by(images.c.sha256)
            if "images" in chosen:
                stmt = stmt.where(chosen["images"])
            hashes = list((await session.execute(stmt)).scalars())
            files = await anyio.to_thread.run_sync(_write_images, zf, data_dir, hashes)
            manifest["images"] = files
            counts["image_files"] = len(files)
        if account is not None and scope == "user":
            users = Base.metadata.tables["users"]
            manifest["user_id"] = account
            manifest["username"] = (await session.execute(select(users.c.username).where(users.c.id == account))
                                    ).scalar()
        zf.writestr("manifest.json", json.dumps(manifest, indent=1))
    return counts


def _write_images(zf: zipfile.ZipFile, data_dir: Path, hashes: list[str]) -> dict[str, int]:
    """Each image file into ``images/<sha256>`` (stored: images are compressed already); its size
    by hash. A file missing from the data dir, or no longer matching its name, is left out."""
    written: dict[str, int] = {}
    for sha in hashes:
        try:
            source = store.stored_at(data_dir, sha).open("rb")
        except FileNotFoundError:
            continue
        info = zipfile.ZipInfo(f"images/{sha}", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_STORED
        with source, zf.open(info, "w", force_zip64=True) as member:
            hashing = _Hashing(member)
            shutil.copyfileobj(source, hashing, 1 << 20)
        if hashing.sha.hexdigest() == sha:
            written[sha] = hashing.size
    return written


def _version() -> str:
    try:
        return metadata.version("fable")
    except metadata.PackageNotFoundError:
        return "unknown"


def _bad(message: str) -> InvalidInput:
    return InvalidInput(f"not a restorable Fable backup: {message}", field="archive")


def read_archive(data: IO[bytes]) -> tuple[zipfile.ZipFile, dict[str, Any]]:
    """Open and fully verify an archive (version, members, checksums, row counts, that it agrees
    with itself); its manifest. Callers run it off the event loop, before taking a connection."""
    try:
        zf = zipfile.ZipFile(data)
        manifest = json.loads(zf.read("manifest.json"))
    except (zipfile.BadZipFile, KeyError, ValueError, EOFError, OSError) as e:
        raise _bad(f"{type(e).__name__}: {e}"[:200]) from e
    if not isinstance(manifest, dict) or not isinstance(manifest.get("format"), int):
        raise _bad("its manifest has no format version")
    if manifest["format"] not in READS:
        raise _bad(f"format {manifest['format']} is not one this Fable reads ({', '.join(map(str, sorted(READS)))})")
    if manifest.get("scope") not in ("instance", "user") or not isinstance(manifest.get("tables"), dict):
        raise _bad("its manifest has no scope or tables")
    known = {t.name: t for t in Base.metadata.sorted_tables if t.name in COVERED}
    for name, entry in manifest["tables"].items():
        if name not in known:
            raise _bad(f"it holds table {name!r}, unknown here")
        if not isinstance(entry, dict) or not isinstance(entry.get("columns"), list):
            raise _bad(f"table {name!r} has no columns")
        allowed = {c.name for c in _columns(known[name], embeddings=True)}
        if unknown := [c for c in entry["columns"] if c not in allowed]:
            raise _bad(f"table {name!r} has unknown columns {unknown[:5]}")
        sha, rows = hashlib.sha256(), 0
        try:
            with zf.open(str(entry.get("member"))) as member:
                while chunk := member.read(1 << 20):
                    sha.update(chunk)
                    rows += chunk.count(b"\n")
        except (zipfile.BadZipFile, KeyError, EOFError, OSError) as e:
            raise _bad(f"member {entry.get('member')!r}: {e}"[:200]) from e
        if sha.hexdigest() != entry.get("sha256") or rows != entry.get("rows"):
            raise _bad(f"table {name!r} fails its checksum")
    images = manifest.setdefault("images", {})
    if not isinstance(images, dict) or not all(isinstance(k, str) and _SHA.fullmatch(k) for k in images):
        raise _bad("its manifest's images are not SHA-256 names")
    types: dict[str, str] = {}
    for digest in images:
        sha = hashlib.sha256()
        try:
            with zf.open(f"images/{digest}") as member:
                head = member.read(1024)
                sha.update(head)
                while chunk := member.read(1 << 20):
                    sha.update(chunk)
        except (zipfile.BadZipFile, KeyError, EOFError, OSError) as e:
            raise _bad(f"image {digest[:12]}: {e}"[:200]) from e
        if sha.hexdigest() != digest:
            raise _bad(f"image {digest[:12]} fails its checksum")
        try:  # what the store holds is an image, whoever made the archive
            types[digest] = sniff(head)
        except NotAnImage as e:
            raise _bad(f"image {digest[:12]}: {e.message}") from e
    manifest["_image_types"] = types  # not the archive's: its files' types, judged by their bytes here
    if problems := inconsistencies(zf, manifest):
        raise _bad("it contradicts itself (was it taken table by table while people wrote?): "
                   + "; ".join(problems[:5]) + "; nothing was restored")
    return zf, manifest


def inconsistencies(zf: zipfile.ZipFile, manifest: dict[str, Any]) -> list[str]:
    """What in a verified archive contradicts itself, before anything is written: a reference to a
    row of an archived table that the archive lacks (in an instance archive; a personal one leaves
    out what other accounts own by design), and a note older than its own history (its version
    below one stored for it, which would make every later edit collide). A backup read from one
    snapshot has none; one read table by table under writes did."""
    entries: dict[str, Any] = manifest["tables"]
    order = [t for t in _restore_order() if t.name in entries]
    ids: dict[str, set[Any]] = {}
    for table in order:
        names = entries[table.name]["columns"]
        if [pk.name for pk in table.primary_key.columns] == ["id"] and "id" in names:
            at, member = names.index("id"), entries[table.name]["member"]
            ids[table.name] = {r[at] for batch in _lines(zf, member) for r in _rows(batch, names)}
    problems: list[str] = []
    for table in order if manifest["scope"] == "instance" else []:
        names = entries[table.name]["columns"]
        refs = [(names.index(c.name), c.name, fk.column.table.name) for c in table.columns if c.name in names
                for fk in c.foreign_keys if fk.column.table.name in ids and fk.column.name == "id"]
        missing: dict[tuple[str, str], list[Any]] = {}
        for batch in _lines(zf, entries[table.name]["member"]) if refs else ():
            for row in _rows(batch, names):
                for i, column, target in refs:
                    if row[i] is not None and row[i] not in ids[target]:
                        missing.setdefault((column, target), []).append(row[i])
        problems += [f"{len(lost)} row(s) of {table.name} name {target} the archive lacks ({column} "
                     f"{', '.join(map(str, sorted(set(lost))[:5]))})" for (column, target), lost in missing.items()]
    if "notes" in entries and "note_versions" in entries:
        problems += _history_ahead(zf, entries)
    return problems


def _rows(batch: list[list[Any]], names: list[str]) -> Iterator[list[Any]]:
    """The well-formed rows of a batch (a malformed one is refused when it is restored)."""
    return (r for r in batch if isinstance(r, list) and len(r) == len(names))


def _history_ahead(zf: zipfile.ZipFile, entries: dict[str, Any]) -> list[str]:
    notes, versions = entries["notes"]["columns"], entries["note_versions"]["columns"]
    if not {"id", "version"} <= set(notes) or not {"note_id", "version"} <= set(versions):
        return []
    newest: dict[Any, int] = {}
    at_note, at_version = versions.index("note_id"), versions.index("version")
    for batch in _lines(zf, entries["note_versions"]["member"]):
        for row in _rows(batch, versions):
            if isinstance(row[at_version], int):
                newest[row[at_note]] = max(newest.get(row[at_note], 0), row[at_version])
    at_id, at_current = notes.index("id"), notes.index("version")
    behind = sorted(row[at_id] for batch in _lines(zf, entries["notes"]["member"]) for row in _rows(batch, notes)
                    if isinstance(row[at_current], int) and row[at_current] < newest.get(row[at_id], 0))
    if not behind:
        return []
    return [f"{len(behind)} note(s) older than their own history (notes {', '.join(map(str, behind[:5]))})"]


class Summary(dict[str, int]):
    """Rows restored per table (and ``skipped``: rows whose owner is not in the archive); ``maps``:
    each table's old id to new id; ``image_files``: the image files written into the store."""

    maps: dict[str, dict[int, int]]
    image_files: int = 0


def _restore_order() -> list[Table]:
    """The tables in an order that restores every table before those referring to it, by foreign
    key and by ids in text and JSON: images right after the accounts, :data:`LATE` tables last."""
    ordered = Base.metadata.sorted_tables
    late = set(LATE)
    while grown := {t.name for t in ordered if t.name not in late
                    and any(fk.column.table.name in late for fk in t.foreign_keys)}:
        late |= grown
    images = Base.metadata.tables["images"]
    assert {fk.column.table.name for fk in images.foreign_keys} == {"users"}, "images must follow users alone"
    early = [t for t in ordered if t.name not in late and t is not images]
    at = early.index(Base.metadata.tables["users"]) + 1
    return [*early[:at], images, *early[at:], *(t for t in ordered if t.name in late)]


def _image_urls(maps: dict[str, dict[int, int]]) -> Callable[[str], str]:
    """Rewrites ``/api/images/<id>`` through the images' map (an image not in the archive keeps its URL)."""
    images = maps.get("images", {})

    def replace(match: re.Match[str]) -> str:
        new = images.get(int(match.group(1)))
        return match.group(0) if new is None else f"/api/images/{new}"

    def rewrite(value: str) -> str:
        return _IMAGE_URL.sub(replace, value) if "/api/images/" in value else value

    return rewrite


_CONTEXT_LISTS = {"used": "notes", "suggested": "notes", "attached": "notes"}


def _json_ids(value: Any, maps: dict[str, dict[int, int]], urls: Callable[[str], str], *,
              lists: dict[str, str], id_table: str | None = None) -> Any:
    """A JSON value with its ids remapped: a key of :data:`ID_KEYS` (``id`` in one of ``lists``)
    holding an integer, to its new id (None when its row is not in the archive); strings'
    image URLs."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            target = ID_KEYS.get(key) or (id_table if key == "id" else None)
            if target is not None and isinstance(item, int) and not isinstance(item, bool):
                out[key] = maps.get(target, {}).get(item)
            else:
                out[key] = _json_ids(item, maps, urls, lists=lists, id_table=lists.get(key))
        return out
    if isinstance(value, list):
        return [_json_ids(item, maps, urls, lists=lists, id_table=id_table) for item in value]
    if isinstance(value, str):
        return urls(value)
    return value


def _decoder(column: Column[Any]) -> Any:
    if isinstance(column.type, DateTime):
        return lambda v: None if v is None else datetime.fromisoformat(v)
    if isinstance(column.type, Date):
        return lambda v: None if v is None else date.fromisoformat(v)
    if isinstance(column.type, JSONB):
        return lambda v: null() if v is None else v
    return None


def _lines(zf: zipfile.ZipFile, member: str) -> Iterator[list[list[Any]]]:
    with zf.open(member) as f:
        batch: list[list[Any]] = []
        for line in f:
            batch.append(json.loads(line))
            if len(batch) >= BATCH:
                yield batch
                batch = []
        if batch:
            yield batch


async def restore(session: AsyncSession, zf: zipfile.ZipFile, manifest: dict[str, Any], *,
                  into_user: int | None = None, data_dir: Path | None = None) -> Summary:
    """Insert a verified archive in ``session``'s transaction. ``into_user``: a user's own archive
    lands in this account (and nothing of other accounts is written). ``data_dir``: its image
    files go into that data dir's store first (those it wrote are removed if the restore fails)."""
    written: list[Path] = []
    if data_dir is not None and manifest.get("images"):
        written = await anyio.to_thread.run_sync(_place_images, zf, data_dir, list(manifest["images"]))
    try:
        summary = await _restore_rows(session, zf, manifest, into_user)
        await rebuild_image_refs(session, list(summary.maps.get("notes", {}).values()))
    except BaseException:
        await anyio.to_thread.run_sync(_remove, written)
        raise
    summary.image_files = len(written)
    return summary


def _place_images(zf: zipfile.ZipFile, data_dir: Path, hashes: list[str]) -> list[Path]:
    written: list[Path] = []
    try:
        for sha in hashes:
            path = store.stored_at(data_dir, sha)
            with zf.open(f"images/{sha}") as member:
                if store.place(path, member):
                    written.append(path)
    except BaseException:
        _remove(written)
        raise
    return written


def _remove(paths: list[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)


async def _restore_rows(session: AsyncSession, zf: zipfile.ZipFile, manifest: dict[str, Any],
                        into_user: int | None) -> Summary:
    maps: dict[str, dict[int, int]] = {}
    summary = Summary(skipped=0)
    summary.maps = maps
    if manifest["scope"] == "user":
        assert into_user is not None
        maps["users"] = {int(manifest.get("user_id", 0)): into_user}
    entries: dict[str, Any] = manifest["tables"]
    if manifest["scope"] == "user" and (foreign := sorted(set(entries) - user_tables())):
        raise _bad(f"a personal backup holds {', '.join(repr(t) for t in foreign[:5])}, which only an instance "
                   "backup may restore; nothing was restored")
    owner = int(manifest.get("user_id", 0)) if manifest["scope"] == "user" else None
    table = None
    try:
        for table in _restore_order():
            entry = entries.get(table.name)
            if entry is None or (table.name == "users" and manifest["scope"] == "user"):
                continue
            summary[table.name] = await _restore_table(session, zf, table, entry, maps, summary,
                                                       manifest.get("_image_types", {}), owner)
    except IntegrityError as e:
        # the server's words (its constraint's name, the values) stay in the log
        log_db_error(getattr(e.orig, "sqlstate", None), str(e.orig).splitlines()[0][:300], level=logging.INFO)
        what = table.name.replace("_", " ") if table is not None else "rows"
        raise Conflict(f"the backup clashes with what is here: its {what} (one with the same name or key "
                       "exists here); nothing was restored") from e
    return summary


async def _restore_table(session: AsyncSession, zf: zipfile.ZipFile, table: Table, entry: dict[str, Any],
                         maps: dict[str, dict[int, int]], summary: Summary, types: dict[str, str],
                         owner: int | None) -> int:
    """Insert one table's rows; with ``owner`` (a user's archive), every row must be that
    account's, by the column it was archived by."""
    names: list[str] = entry["columns"]
    owned_at = names.index(column) if owner is not None and (column := _owner_column(table)) in names else None
    if table.name == "images" and not {"content_type", "sha256"} <= set(names):
        raise _bad("its images have no content type or hash")
    columns = [table.c[n] for n in names]
    decoders = [(i, d) for i, c in enumerate(columns) if (d := _decoder(c)) is not None]
    keyed = [pk.name for pk in table.primary_key.columns] == ["id"] and "id" in names
    id_at = names.index("id") if keyed else -1
    # a reference to a row not in the archive: NULL where the database would set it NULL had that
    # row been deleted (ON DELETE SET NULL), else the row is left out as a cascade would
    refs = [(i, fk.column.table.name, fk.ondelete == "SET NULL", fk.column.table is table)
            for i, c in enumerate(columns) for fk in c.foreign_keys]
    sequence = None
    if keyed:
        sequence = (await session.execute(select(func.pg_get_serial_sequence(table.name, "id")))).scalar()
    mapping = maps.setdefault(table.name, {})
    image_types: dict[str, str] | None = types if table.name == "images" else None
    urls = _image_urls(maps)
    texts = [i for i, c in enumerate(columns) if isinstance(c.type, String)]
    jsons = [(i, _CONTEXT_LISTS if c.name == "context" else {}) for i, c in enumerate(columns)
             if (table.name, c.name) in JSON_IDS]
    pending: list[tuple[int, str, int]] = []  # (new id, column, old target): self-references set afterwards
    restored = 0
    for lines in _lines(zf, entry["member"]):
        batch = lines
        if any(not isinstance(r, list) or len(r) != len(names) for r in batch):
            raise _bad(f"a row of {table.name!r} does not match its columns")
        if owned_at is not None and any(r[owned_at] != owner for r in batch):
            raise _bad(f"a row of {table.name!r} belongs to another account than the backup's; nothing was restored")
        if table.name == "users":
            await _existing_users(session, batch, names, mapping)
            batch = [r for r in batch if r[id_at] not in mapping]
        if keyed and batch:
            new_ids = await _allocate(session, sequence, table, len(batch))
            for row, new in zip(batch, new_ids, strict=True):
                mapping[row[id_at]] = new
                row[id_at] = new
        rows: list[dict[str, Any]] = []
        for row in batch:
            keep = True
            for i, target, nulled, self_ref in refs:
                old = row[i]
                if old is None:
                    continue
                mapped = maps.get(target, {}).get(old)
                if mapped is None and self_ref and keyed:
                    pending.append((row[id_at], names[i], old))
                elif mapped is None and not nulled:
                    keep = False
                    break
                row[i] = mapped
            if not keep:
                summary["skipped"] += 1
                continue
            if image_types is not None:
                _image_type(row, names, image_types)
            for i in texts:
                if row[i]:
                    row[i] = urls(row[i])
            for i, lists in jsons:
                if row[i] is not None:
                    row[i] = _json_ids(row[i], maps, urls, lists=lists)
            for i, decode in decoders:
                row[i] = decode(row[i])
            rows.append(dict(zip(names, row, strict=True)))
        if rows:
            stmt = pg_insert(table).on_conflict_do_nothing() if table.name in MERGED else insert(table)
            await session.execute(stmt, rows)
            restored += len(rows)
    for column in sorted({c for _, c, _ in pending}):
        fixes = [{"b_id": new, "b_ref": mapping[old]} for new, c, old in pending if c == column and old in mapping]
        kept = {c.name: c for c in table.columns if c.onupdate is not None}  # an update stamp stays as archived
        for start in range(0, len(fixes), BATCH):
            await session.execute(
                update(table).where(table.c.id == bindparam("b_id")).values({**kept, column: bindparam("b_ref")})
                .execution_options(synchronize_session=False), fixes[start:start + BATCH])
    if keyed and sequence is None:
        raise InvalidInput(f"table {table.name!r} has no id sequence")
    return restored


_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/avif"})


def _image_type(row: list[Any], names: list[str], types: dict[str, str]) -> None:
    """An image row's content type is its file's, judged by the bytes; without its file in the
    archive, one of the types the store keeps (never, say, text/html served from our origin)."""
    at_type, at_sha = names.index("content_type"), names.index("sha256")
    if (known := types.get(row[at_sha])) is not None:
        row[at_type] = known
    elif row[at_type] not in _IMAGE_TYPES:
        raise _bad(f"an image row has the content type {str(row[at_type])[:40]!r}")


async def owner_here(session: AsyncSession, manifest: dict[str, Any]) -> int:
    """The account here a user's archive belongs to: the one of its username."""
    users = Base.metadata.tables["users"]
    found = (await session.execute(select(users.c.id).where(users.c.username == manifest.get("username")))).scalar()
    if found is None:
        raise InvalidInput(f"no account {manifest.get('username')!r} to restore its backup into")
    return int(found)


async def _allocate(session: AsyncSession, sequence: str | None, table: Table, n: int) -> list[int]:
    if sequence is None:
        raise InvalidInput(f"table {table.name!r} has no id sequence")
    result = await session.execute(text("SELECT nextval(:s) FROM generate_series(1, :n)"), {"s": sequence, "n": n})
    return [r[0] for r in result]


async def _existing_users(session: AsyncSession, batch: list[list[Any]], names: list[str],
                          mapping: dict[int, int]) -> None:
    """Map archived users onto accounts of the same name already here."""
    at_id, at_name = names.index("id"), names.index("username")
    by_name = {r[at_name]: r[at_id] for r in batch}
    users = Base.metadata.tables["users"]
    found = await session.execute(select(users.c.id, users.c.username).where(users.c.username.in_(list(by_name))))
    for uid, username in found:
        mapping[by_name[username]] = uid
