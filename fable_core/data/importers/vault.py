"""Import an Obsidian vault or a basic-memory project (a ZIP of its folder) as notes.

Each Markdown file becomes a note: its title is the front matter's ``title`` or the file name,
its tags the front matter's ``tags`` (and ``type`` for basic-memory), its inline ``#tags`` and
its folder (``folder/sub``, a tag: folders are how vaults group, tags are how Fable does without
forcing one project per note). The rest of the front matter stays at the top of the body as
written (an ``aliases`` field keeps finding the note for later links). ``[[links]]`` keep
working: ``[[folder/Note]]``, ``[[Note#Heading]]``, ``[[Note|label]]`` and links to a front
matter ``alias`` or basic-memory ``permalink`` are rewritten to ``[[Title#Heading|label]]``;
``[[#Heading]]`` stays (the same note). Embedded images (``![[a.png]]``, ``![[a.png|300]]``,
``![[a.png#x]]``, ``![alt](a%20b.png)``) go into the image store and the embed becomes
``![alt](/api/images/<id>)``; other embedded files stay as written (no note link) and are
reported. Nothing inside code is rewritten (:mod:`fable_core.knowledge.codespans`). Titles are
made distinct, never dropped: the same title as a note of the user's or an earlier file is
renamed ``Title (2)`` and reported (:func:`~fable_core.knowledge.importing.unique_titles`);
links to titles nobody has are listed.
basic-memory's observations (``- [idea] text #tag``) and relations (``- relates_to [[Other]]``)
are Markdown already: they arrive as text, tags and links.

A dry run (the default) reads and checks everything and reports what would be created and
skipped, storing nothing. An import is one transaction. Files imported before (same
vault-relative path, note still there) are skipped, so running it again creates no duplicates.
"""

from __future__ import annotations

import posixpath
import re
from datetime import datetime
from typing import Literal
from urllib.parse import unquote

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.config import Settings
from fable_core.data.importers import archive
from fable_core.data.importers import markdown as md
from fable_core.data.importers.archive import IMPORT, Entry, is_zip, unpack
from fable_core.data.importers.report import LISTED, ImportReport, ItemLine, already_imported, record
from fable_core.db.models import title_key
from fable_core.errors import InvalidInput
from fable_core.infra.offload import offload
from fable_core.knowledge.codespans import outside_code, prose
from fable_core.knowledge.importing import ImportedNote, store_notes, taken_titles, unique_titles
from fable_core.knowledge.types import MAX_BODY, MAX_TITLE
from fable_core.knowledge.wikilinks import is_file_name
from fable_core.outside.images import store
from fable_core.outside.images.sniff import NotAnImage
from fable_core.tools import Context, Route, tool
from fable_core.tools.binary import MAX_BINARY, BinaryFile

__all__ = ["import_vault"]

IMAGE_TYPES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif")
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]|\n]{1,300}?)(?:\|([^\[\]\n]{0,300}))?\]\]")
_SIZE = re.compile(r"\d{1,4}(?:x\d{1,4})?")  # Obsidian's image size: |300 or |300x200
_MD_IMAGE = re.compile(r"!\[([^\]\n]{0,300})\]\(<?([^)\n>\s]{1,500})>?(?:[ \t]+\"[^\"\n]{0,300}\")?\)")

VaultKind = Literal["obsidian", "basic_memory"]


def _upload_limit(settings: Settings) -> int:
    return MAX_BINARY  # docs/import.md: 64 MB, spooled to disk as it arrives on the REST route


@tool(group="data", title="Import a vault", scope="write", body_limit=_upload_limit,
      route=Route("POST", "/import/vault"))
async def import_vault(
    ctx: Context, content: BinaryFile, kind: VaultKind = "obsidian", dry_run: bool = True,
) -> ImportReport:
    """Import an Obsidian vault or basic-memory project as notes.

    Front matter, #tags, folders (as tags), [[links]] and images come along. Dry run by default:
    read the report, then run with dry_run=false. Files imported before are skipped.

    Args:
        content: The vault folder as a ZIP.
    """
    if not is_zip(content.file):
        raise InvalidInput("upload the vault as a ZIP of its folder", field="content")
    entries = _strip_root(await unpack(content.file))
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
    by_name = _attachments([e for e in entries if not e.path.lower().endswith(".md")])  # every file an embed may name
    skipped: list[ItemLine] = [ItemLine(item=e.path, reason="not a Markdown note or an image")
                               for e in entries if not e.path.lower().endswith((".md", *IMAGE_TYPES))]
    warnings: list[ItemLine] = []
    done = await already_imported(s, ctx.user_id, kind, "note", [e.path for e in notes_in])
    skipped.extend(ItemLine(item=e.path, id=done[e.path], reason="imported before") for e in notes_in if e.path in done)
    fresh = [entry for entry in notes_in if entry.path not in done]
    parsed, unread, problems = await offload(IMPORT, sum(e.size for e in fresh), _parse_notes, fresh)
    skipped += unread
    warnings += problems
    parsed, renamed = await _distinct(s, ctx.user_id, parsed)
    warnings += renamed
    names = _link_names(parsed)
    unresolved: dict[str, list[str]] = {}  # link target no note of the vault has → the files naming it
    images: dict[str, int | None] = {}  # attachment path → image id (None in a dry run / not an image)
    batch: list[ImportedNote] = []
    sources: list[tuple[str, datetime | None]] = []
    size = sum(len(page.body) for _, _, page in parsed)
    for key, found in (await offload(IMPORT, size, _embedded, parsed, by_name)).items():
        images[key] = await _store_image(ctx, s, found, warnings, dry_run, written)
    rewritten = await offload(IMPORT, size, _rewrite_all, parsed, names, by_name, images, warnings, dry_run)
    for (entry, title, page), (text, outside) in zip(parsed, rewritten, strict=True):
        for target in outside:
            unresolved.setdefault(target, []).append(entry.path)
        body = _with_properties(page, text)
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
    warnings += await _unresolved(s, ctx.user_id, unresolved)
    created: list[ItemLine] = []
    if batch:
        result = await store_notes(ctx, s, batch, dry_run=dry_run, created_at=[at for _, at in sources],
                                   similar=False)
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


async def _distinct(
    s: AsyncSession, user_id: int, parsed: list[tuple[Entry, str, md.Parsed]],
) -> tuple[list[tuple[Entry, str, md.Parsed]], list[ItemLine]]:
    """The vault's notes with titles distinct from each other and from the user's notes (the
    later of two the same is renamed ``Title (2)``), and a warning for each renamed one."""
    titles = await unique_titles(s, user_id, [title for _, title, _ in parsed])
    renamed = [ItemLine(item=entry.path, title=final,
                        reason=f"imported as {final!r}: a note titled {title!r} exists (links to this file lead here)")
               for (entry, title, _), final in zip(parsed, titles, strict=True) if final != title]
    return [(entry, final, page) for (entry, _, page), final in zip(parsed, titles, strict=True)], renamed


async def _unresolved(s: AsyncSession, user_id: int, targets: dict[str, list[str]]) -> list[ItemLine]:
    """A warning for each link to a title no note of the vault has and none of Fable's either:
    kept as written, it resolves when a note with that title appears."""
    existing = await taken_titles(s, user_id, [title_key(t) for t in targets])
    return [ItemLine(item=paths[0], title=target,
                     reason=f"link to {target!r}: no note of that title in the vault or in Fable "
                            f"({len(paths)} file{'s' if len(paths) > 1 else ''}); kept, it resolves when one appears")
            for target, paths in targets.items() if title_key(target) not in existing]


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


_FABLE_FIELDS = {"title", "tags", "tag"}
"""Front matter fields that become the note's own title and tags, so are not kept twice."""
_EXPORTED = {"id", "kind", "created", "updated", "project", "milestone", "parent_id"}
_EXPORTED_TASK = {"status", "priority", "due", "recurrence", "completed"}
"""What Fable's own Markdown export adds (:func:`fable_core.data.export.export._file_text`): facts of
the instance it came from, not properties of the note; a task's fields only on a task (a note's
``status`` is its own property), a structured note's ``fields`` only on one."""


def _exported(meta: dict[str, object]) -> set[str]:
    """The fields a file's front matter holds because Fable exported it (none for a vault's own)."""
    if not {"id", "kind", "updated"} <= meta.keys():
        return set()
    kind = meta["kind"]
    if kind == "task":
        return _EXPORTED | _EXPORTED_TASK
    return _EXPORTED if kind == "note" else _EXPORTED | {"fields"}


def _with_properties(page: md.Parsed, body: str) -> str:
    """``body`` below the rest of the file's front matter, as written: properties such as
    ``aliases`` (links find the note by them), ``status`` or ``cssclasses`` stay with the note."""
    kept = md.without_keys(page.lines, _FABLE_FIELDS | _exported(page.meta))
    if not any(line.strip() for line in kept):
        return body
    return "---\n" + "\n".join(kept) + "\n---\n\n" + body


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


def _attachment(attachments: dict[str, Entry], folder: str, ref: str) -> Entry | None:
    """The file ``ref`` names from a note in ``folder``: by path relative to the note, vault path
    or file name, as Obsidian resolves them."""
    ref = unquote(ref.strip())
    joined = posixpath.normpath(posixpath.join(folder, ref)) if folder else posixpath.normpath(ref)
    return attachments.get(joined) or attachments.get(ref) or attachments.get(posixpath.basename(ref))


def _embedded(parsed: list[tuple[Entry, str, md.Parsed]], attachments: dict[str, Entry]) -> dict[str, Entry]:
    """Every image file the notes embed in their prose (on a worker thread: it reads every body)."""
    wanted: dict[str, Entry] = {}
    for entry, _, page in parsed:
        folder = posixpath.dirname(entry.path)
        text = prose(page.body)
        for match in _WIKILINK.finditer(text):
            name = match.group(2).partition("#")[0]
            if match.group(1) and name.lower().endswith(IMAGE_TYPES) and (
                    found := _attachment(attachments, folder, name)) is not None:
                wanted[found.path] = found
        for match in _MD_IMAGE.finditer(text):
            if _local(match.group(2)) and (found := _attachment(attachments, folder, match.group(2))) is not None:
                wanted[found.path] = found
    return wanted


def _rewrite_all(
    parsed: list[tuple[Entry, str, md.Parsed]], names: dict[str, str], attachments: dict[str, Entry],
    images: dict[str, int | None], warnings: list[ItemLine], dry_run: bool,
) -> list[tuple[str, list[str]]]:
    """Each note's body rewritten (:func:`_rewrite`), on a worker thread: one pass over every
    body of the vault, which may be hundreds of megabytes, never on the event loop."""
    return [_rewrite(page.body, entry.path, names, attachments, images, warnings, dry_run)
            for entry, _, page in parsed]


def _rewrite(
    body: str, path: str, names: dict[str, str], attachments: dict[str, Entry], images: dict[str, int | None],
    warnings: list[ItemLine], dry_run: bool,
) -> tuple[str, list[str]]:
    """``body`` with its links and embeds made Fable's, in its prose only (code keeps every byte);
    and the link targets it names that no note of the vault has (checked against Fable's notes
    by the caller)."""
    folder = posixpath.dirname(path)
    outside: list[str] = []

    def attachment(ref: str) -> Entry | None:
        return _attachment(attachments, folder, ref)

    def src(entry: Entry | None) -> str | None:
        if entry is None or images.get(entry.path) is None:
            return None
        return f"/api/images/{images[entry.path]}" if not dry_run else f"/api/images/<{entry.path}>"

    def embedded_file(match: re.Match[str], name: str, label: str | None) -> str:
        """``![[pic.png]]``, ``![[pic.png|300]]``, ``![[pic.png#anchor]]``, ``![[diagram.svg]]``."""
        found = attachment(name)
        if name.lower().endswith(IMAGE_TYPES) and (url := src(found)) is not None:
            alt = posixpath.basename(name)
            if label and label.strip():
                alt = f"{alt}|{label.strip()}" if _SIZE.fullmatch(label.strip()) else label.strip()
            return f"![{alt}]({url})"
        if found is None:
            warnings.append(ItemLine(item=path, reason=f"embed of {name!r}: no such file in the vault; "
                                                       "kept as written"))
        elif not name.lower().endswith(IMAGE_TYPES):
            warnings.append(ItemLine(item=path, reason=f"embed of {name!r}: only raster images are stored; kept "
                                                       "as written (not a link to a note)"))
        return match.group(0)

    def link(match: re.Match[str]) -> str:
        bang, target, label = match.group(1), match.group(2), match.group(3)
        name, mark, anchor = target.partition("#")
        if bang and is_file_name(name):
            return embedded_file(match, name, label)
        if not name.strip():  # [[#Heading]]: a place in this very note, as Fable writes it too
            return match.group(0)
        name = name.strip().removesuffix(".md")
        title = names.get(title_key(name)) or names.get(title_key(posixpath.basename(name)))
        if title is None:
            title = posixpath.basename(name) or name
            outside.append(title)
        spot = f"#{anchor}" if mark and anchor.strip() else ""
        if label is None and title_key(title) != title_key(posixpath.basename(name)):
            label = posixpath.basename(name) + spot  # what the text said, linking to the note it meant
        return f"{bang}[[{title}{spot}|{label}]]" if label else f"{bang}[[{title}{spot}]]"

    def image(match: re.Match[str]) -> str:
        ref = match.group(2)
        if not _local(ref):
            return match.group(0)
        url = src(attachment(ref))
        return f"![{match.group(1)}]({url})" if url else match.group(0)

    rewritten = outside_code(body, lambda piece: _MD_IMAGE.sub(image, _WIKILINK.sub(link, piece)))
    return rewritten, outside


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
