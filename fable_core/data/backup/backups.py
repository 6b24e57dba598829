"""Backup tools: ``backup_instance`` (an admin's archive of everything), ``backup_mine`` (your
own data) and ``restore_backup`` (an instance archive for an admin; your own archive into your
account). The archive format and its rules: :mod:`fable_core.data.backup.archive`."""

from __future__ import annotations

import io
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.admin.audit import Actor, audit
from fable_core.config import Settings
from fable_core.data.backup import archive
from fable_core.errors import Forbidden
from fable_core.identity.revocations import announce
from fable_core.tools import Context, Route, tool
from fable_core.tools.binary import BinaryFile, Blob

__all__ = ["Restored", "restore_archive"]

CONTENT_TYPE = "application/zip"


class Restored(BaseModel):
    scope: str
    rows: dict[str, int]
    skipped: int
    image_files: int


def _blob(content: bytes, what: str) -> Blob:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return Blob(content=content, content_type=CONTENT_TYPE,
                headers={"Content-Disposition": f'attachment; filename="fable-{what}-{stamp}.zip"',
                         "Cache-Control": "no-store"})


@tool(group="data", title="Back up the instance", scope="read", admin=True, credentials="session",
      transaction="phases", agents=False,
      route=Route("GET", "/backups/instance"))
async def backup_instance(ctx: Context, embeddings: bool = False) -> Blob:
    """Every account and its data as one ZIP archive (restore_backup reads it).

    Args:
        embeddings: Include embeddings (otherwise recomputed after a restore).
    """
    out = io.BytesIO()
    async with ctx.snapshot() as session:  # one moment of every table, streamed through a cursor
        await archive.write_archive(session, out, scope="instance", embeddings=embeddings,
                                    data_dir=ctx.settings.fable_data_dir)
    return _blob(out.getvalue(), "instance")


@tool(group="data", title="Back up my data", scope="read", transaction="phases", agents=False,
      route=Route("GET", "/backups/mine"))
async def backup_mine(ctx: Context, embeddings: bool = False) -> Blob:
    """Your own data as one ZIP archive (restore_backup reads it).

    Args:
        embeddings: Include embeddings (otherwise recomputed after a restore).
    """
    out = io.BytesIO()
    async with ctx.snapshot() as session:  # one moment of every table, streamed through a cursor
        await archive.write_archive(session, out, scope="user", account=ctx.user_id, embeddings=embeddings,
                                    data_dir=ctx.settings.fable_data_dir)
    return _blob(out.getvalue(), "mine")


def _restore_limit(settings: Settings) -> int:
    return settings.fable_restore_max_bytes


@tool(group="data", title="Restore a backup", scope="write", agents=False, transaction="phases",
      body_limit=_restore_limit,
      route=Route("POST", "/backups/restore"))
async def restore_backup(ctx: Context, archive_file: BinaryFile) -> Restored:
    """Restore an archive, all or nothing, with fresh ids: an instance's (admins) or yours into your account.

    Args:
        archive_file: A ZIP from backup_instance or backup_mine.
    """
    # verified (every checksum) before a connection is taken: a large archive takes a while
    zf, manifest = await anyio.to_thread.run_sync(archive.read_archive, archive_file.file)
    if manifest["scope"] == "instance" and not ctx.caller.is_admin:
        raise Forbidden("only an admin may restore an instance backup")
    if manifest["scope"] == "instance" and not ctx.caller.in_person:
        raise Forbidden("an instance backup is restored only in a signed-in session or from the operator's command "
                        "line, never with an API key or an OAuth token", reason="session_only")
    if manifest["scope"] == "user" and manifest.get("username") != ctx.caller.username:
        raise Forbidden("this is another account's backup: only its owner may restore it")
    async with ctx.transaction() as session:
        return await restore_archive(session, zf, manifest, Actor.of(ctx.caller), into_user=ctx.user_id,
                                     data_dir=ctx.settings.fable_data_dir)


async def restore_archive(session: AsyncSession, zf: zipfile.ZipFile, manifest: dict[str, Any], actor: Actor, *,
                          into_user: int | None, data_dir: Path) -> Restored:
    """Restore a verified archive in ``session``'s transaction, recorded there exactly when it
    commits: audited, and announced (accounts and keys may have changed: every process forgets
    what it remembered of credentials). The tool and ``fable restore`` both restore through here."""
    summary = await archive.restore(session, zf, manifest, into_user=into_user, data_dir=data_dir)
    skipped = summary.pop("skipped", 0)
    await audit(session, actor, "backup.restore", scope=manifest["scope"], rows=sum(summary.values()),
                skipped=skipped)
    await announce(session, "restore")
    return Restored(scope=manifest["scope"], rows=dict(summary), skipped=skipped, image_files=summary.image_files)
