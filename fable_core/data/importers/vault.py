"""Import an Obsidian vault or a basic-memory project (a ZIP of its folder) as notes.

Each Markdown file becomes a note: its title is the front matter's ``title`` or the file name,
its tags the front matter's ``tags`` (and ``type`` for basic-memory), its inline ``#tags`` and
its folder (``folder/sub``, a tag: folders are how vaults group, tags are how Fable does
without forcing one project per note). ``[[links]]`` keep working: ``[[folder/Note]]``,
``[[Note#Heading]]``, ``[[Note|label]]`` and links to a front matter ``alias`` or basic-memory
``permalink`` are rewritten to ``[[Title|label]]``. Embedded images (``![[a.png]]``,
``![alt](a%20b.png)``) go into the image store and the embed becomes ``![alt](/api/images/<id>)``.
basic-memory's observations (``- [idea] text #tag``) and relations (``- relates_to [[Other]]``)
are Markdown already: they arrive as text, tags and links.

A dry run (the default) reads and checks everything and reports what would be created and
skipped, storing nothing. An import is one transaction. Files imported before (same
vault-relative path, note still there) are skipped, so running it again creates no duplicates;
so is a note whose title an existing note has (the rules of import_notes).
"""

from __future__ import annotations

import posixpath
import re
from datetime import datetime
from typing import Literal
from urllib.parse import unquote

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.data.importers import archive
from fable_core.data.importers import markdown as md
from fable_core.data.importers.archive import IMPORT, Entry, is_zip, unpack
from fable_core.data.importers.report import LISTED, ImportReport, ItemLine, already_imported, record
from fable_core.db.models import title_key
from fable_core.errors import InvalidInput
from fable_core.infra.offload import offload
from fable_core.knowledge.importing import ImportedNote, store_notes
from fable_core.knowledge.types import MAX_BODY, MAX_TITLE
from fable_core.outside.images import store
from fable_core.outside.images.sniff import NotAnImage
from fable_core.tools import Context, Route, tool
from fable_core.tools.binary import Binary

__all__ = ["import_vault"]

IMAGE_TYPES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif")
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]|\n]{1,300}?)(?:\|([^\[\]\n]{0,300}))?\]\]")
_MD_IMAGE = re.compile(r"!\[([^\]\n]{0,300})\]\(<?([^)\n>\s]{1,500})>?(?:[ \t]+\"[^\"\n]{0,300}\")?\)")

VaultKind = Literal["obsidian", "basic_memory"]


@tool(group="data", title="Import a vault", scope="write", route=Route("POST", "/import/vault"))
async def import_vault(
    ctx: Context, content: Binary, kind: VaultKind = "obsidian", dry_run: bool = True,
) -> ImportReport:
    """Import an Obsidian vault or basic-memory project as notes.

    Front matter, #tags, folders (as tags), [[links]] and images come along. Dry run by default:
    read the report, then run with dry_run=false. Files imported before are skipped.

    Args:
        content: The vault folder as a ZIP.
    """
    if not is_zip(content):
        raise InvalidInput("upload the vault as a ZIP of its folder", field="content")
    entries = _strip_root(await unpack(content))
    written: list[str] = []
    try:
        return await import_entries(ctx, ctx.session, entries, kind, dry_run=dry_run, written=written)
    except BaseException:
        await _discard(ctx, written)
        raise


async def _discard(ctx: Context, written: list[str]) -> None:
    """The image files a failed import wrote, removed unless an image row someone committed
    meanwhile names them (the import's own rows are rolled back with it)."""
    if written:
        async with ctx.fable.db.reading() as s:
            await store.discard_unused(s, ctx.settings.fable_data_dir, written)


async def import_entries(
    ctx: Context, s: AsyncSession, entries: list[Entry], kind: VaultKind, *, dry_run: bool,
    written: list[str] | None = None,
) -> ImportReport:
    """The import of a vault's files (vault-relative paths), in session ``s``; ``written``
    collects the hashes of the image files it put in the store that were not there before."""
    written = [] if written is None else written
    notes_in = [e for e in entries if e.path.lower().endswith(".md")]
    by_name = _attachments([e for e in entries if e.path.lower().endswith(IMAGE_TYPES)])
    skipped: list[ItemLine] = [ItemLine(item=e.path, reason="not a Markdown note or an image")
                               for e in entries if not e.path.lower().endswith((".md", *IMAGE_TYPES))]
    warnings: list[ItemLine] = []
    done = await already_imported(s, ctx.user_id, kind, "note", [e.path for e in notes_in])
    skipped.extend(ItemLine(item=e.path, id=done[e.path], reason="imported before") for e in notes_in if e.path in done)
    fresh = [entry for entry in notes_in if entry.path not in done]
    parsed, unread, problems = await offload(IMPORT, sum(e.size for e in fresh), _parse_notes, fresh)
    skipped += unread
    warnings += problems
    names = _link_names(parsed)
    images: dict[str, int | None] = {}  # attachment path → image id (None in a dry run / not an image)
    batch: list[ImportedNote] = []
    sources: list[tuple[str, datetime | None]] = []
    for entry, title, page in parsed:
        body = await _rewrite(ctx, s, page.body, entry.path, names, by_name, images, warnings, dry_run, written)
        meta = page.meta
        tags = md.tags_of(md.as_list(meta.get("tags")), md.as_list(meta.get("tag")),
                          md.as_list(meta.get("type")) if kind == "basic_memory" else [],
                          md.inline_tags(page.body), [t for t in [md.folder_tag(entry.path)] if t])
        if len(body) > MAX_BODY:
            skipped.append(ItemLine(item=entry.path, title=title, reason=f"longer than {MAX_BODY} characters"))
            continue
        try:
            batch.append(ImportedNote(title=title, body=body, tags=tags or None))
        except ValidationError as e:
            skipped.append(ItemLine(item=entry.path, title=title, reason=e.errors()[0]["msg"]))
            continue
        sources.append((entry.path, md.as_date(meta.get("created") or meta.get("date"))))
    created: list[ItemLine] = []
    if batch:
        result = await store_notes(ctx, s, batch, dry_run=dry_run, created_at=[at for _, at in sources])
        skipped.extend(ItemLine(item=sources[d.index][0], title=d.title, id=d.existing_note_id, reason=d.reason)
                       for d in result.skipped)
        created = [ItemLine(item=path, title=note.title, id=note_id)
                   for (path, _), note, note_id, dup in zip(sources, batch, result.ids, _flags(result, len(batch)),
                                                            strict=True) if not dup]
        if not dry_run:
            made = [(path, note_id) for (path, _), note_id in zip(sources, result.ids, strict=True) if note_id]
            await record(s, ctx.user_id, kind, "note", made)
    stored = sum(1 for i in images.values() if i is not None)
    return ImportReport(dry_run=dry_run, created=len(created), skipped=len(skipped), images=stored,
                        created_items=created[:LISTED], skipped_items=skipped[:LISTED], warnings=warnings[:LISTED])


def _parse_notes(entries: list[Entry]) -> tuple[list[tuple[Entry, str, md.Parsed]], list[ItemLine], list[ItemLine]]:
    """Each note file decoded and its front matter read (on a worker thread); the parsed ones,
    the skipped ones and warnings."""
    parsed: list[tuple[Entry, str, md.Parsed]] = []
    skipped: list[ItemLine] = []
    warnings: list[ItemLine] = []
    for entry in entries:
        text, why = _text(entry)
        if text is None:
            skipped.append(ItemLine(item=entry.path, reason=why))
            continue
        page = md.parse_markdown(text)
        if page.problem:
            warnings.append(ItemLine(item=entry.path, reason=f"{page.problem}: kept as text in the body"))
        parsed.append((entry, _title(entry.path, page.meta), page))
    return parsed, skipped, warnings


def _flags(result: object, n: int) -> list[bool]:
    flags = [False] * n
    for duplicate in result.skipped:  # type: ignore[attr-defined]
        flags[duplicate.index] = True
    return flags


def _strip_root(entries: list[Entry]) -> list[Entry]:
    """Paths relative to the vault: a ZIP of the folder puts every file under its name."""
    tops = {e.path.split("/", 1)[0] for e in entries}
    if len(tops) == 1 and all("/" in e.path for e in entries):
        top = next(iter(tops)) + "/"
        return [Entry(e.path.removeprefix(top), e.content, e.size) for e in entries]
    return entries


# A note's file larger than this cannot become a note (MAX_BODY characters, 4 bytes each at most):
# it is listed as skipped without being decoded or parsed
_MAX_NOTE_BYTES = 4 * MAX_BODY


def _text(entry: Entry) -> tuple[str | None, str]:
    if entry.content is None:
        return None, f"larger than {archive.MAX_FILE} bytes"
    if entry.size > _MAX_NOTE_BYTES:
        return None, f"larger than {_MAX_NOTE_BYTES} bytes: more than a note holds"
    if b"\x00" in entry.content[:8192]:
        return None, "not text (a binary file named .md)"
    try:
        return entry.content.decode("utf-8"), ""
    except UnicodeDecodeError:
        return None, "not UTF-8 text"


def _stem(path: str) -> str:
    name = posixpath.basename(path)
    return name[:-3] if name.lower().endswith(".md") else name


def _title(path: str, meta: dict[str, object]) -> str:
    title = meta.get("title")
    text = title if isinstance(title, str) and title.strip() else _stem(path)
    return text.strip()[:MAX_TITLE] or "Untitled"


def _link_names(parsed: list[tuple[Entry, str, md.Parsed]]) -> dict[str, str]:
    """Title key of every name a link may use (file name, path, alias, permalink) → the title."""
    names: dict[str, str] = {}
    for entry, title, page in parsed:
        for name in (entry.path[:-3], _stem(entry.path), *md.as_list_plain(page.meta.get("aliases")),
                     *md.as_list_plain(page.meta.get("alias")), page.meta.get("permalink")):
            if isinstance(name, str) and name.strip():
                names.setdefault(title_key(name), title)
    return names


def _attachments(entries: list[Entry]) -> dict[str, Entry]:
    """Path and file name (Obsidian's shortest form) → the attachment."""
    found: dict[str, Entry] = {}
    for entry in entries:
        found[entry.path] = entry
        found.setdefault(posixpath.basename(entry.path), entry)
    return found


async def _rewrite(
    ctx: Context, s: AsyncSession, body: str, path: str, names: dict[str, str], attachments: dict[str, Entry],
    images: dict[str, int | None], warnings: list[ItemLine], dry_run: bool, written: list[str],
) -> str:
    folder = posixpath.dirname(path)
    wanted: dict[str, Entry] = {}

    def attachment(ref: str) -> Entry | None:
        ref = unquote(ref.strip())
        joined = posixpath.normpath(posixpath.join(folder, ref)) if folder else posixpath.normpath(ref)
        return attachments.get(joined) or attachments.get(ref) or attachments.get(posixpath.basename(ref))

    for match in _WIKILINK.finditer(body):
        if (match.group(1) and match.group(2).lower().endswith(IMAGE_TYPES)
                and (found := attachment(match.group(2).split("#")[0])) is not None):
            wanted[found.path] = found
    for match in _MD_IMAGE.finditer(body):
        if (_local(match.group(2)) and (found := attachment(match.group(2))) is not None):
            wanted[found.path] = found
    for key, entry in wanted.items():
        if key not in images:
            images[key] = await _store_image(ctx, s, entry, warnings, dry_run, written)

    def src(entry: Entry | None) -> str | None:
        if entry is None or images.get(entry.path) is None:
            return None
        return f"/api/images/{images[entry.path]}" if not dry_run else f"/api/images/<{entry.path}>"

    def link(match: re.Match[str]) -> str:
        bang, target, label = match.group(1), match.group(2), match.group(3)
        if bang and target.lower().endswith(IMAGE_TYPES):
            url = src(attachment(target.split("#")[0]))
            alt = label if label and not label.strip().isdigit() else posixpath.basename(target)
            return f"![{alt}]({url})" if url else match.group(0)
        name, _, heading = target.partition("#")
        name = name.strip().removesuffix(".md")
        title = names.get(title_key(name)) or names.get(title_key(posixpath.basename(name))) \
            or posixpath.basename(name) or name
        if label is None and heading:
            label = f"{posixpath.basename(name) or title} > {heading.lstrip('^')}"
        elif label is None and title_key(title) != title_key(posixpath.basename(name)):
            label = posixpath.basename(name)
        return f"[[{title}|{label}]]" if label else f"[[{title}]]"

    def image(match: re.Match[str]) -> str:
        ref = match.group(2)
        if not _local(ref):
            return match.group(0)
        url = src(attachment(ref))
        return f"![{match.group(1)}]({url})" if url else match.group(0)

    return _MD_IMAGE.sub(image, _WIKILINK.sub(link, body))


def _local(ref: str) -> bool:
    return "://" not in ref and not ref.startswith(("/", "data:"))


async def _store_image(
    ctx: Context, s: AsyncSession, entry: Entry, warnings: list[ItemLine], dry_run: bool, written: list[str],
) -> int | None:
    if entry.content is None:
        warnings.append(ItemLine(item=entry.path,
                                 reason=f"image larger than {archive.MAX_FILE} bytes: embed kept as is"))
        return None
    try:
        image = store.check(entry.content, ctx.settings.fable_image_max_bytes)
    except NotAnImage as e:
        warnings.append(ItemLine(item=entry.path, reason=f"{e}: embed kept as is"))
        return None
    except InvalidInput as e:
        warnings.append(ItemLine(item=entry.path, reason=f"{e}: embed kept as is"))
        return None
    if dry_run:
        return 0
    if await store.write_file(ctx.settings, image):
        written.append(image.sha256)
    return (await store.save(s, ctx.caller, image, None)).id
