"""Image files travel in backups: a note embedding an uploaded image is backed up, the files are
lost, and a restore into an instance already in use (other images hold the first ids) brings the
bytes back under the note's remapped image URL; a restore that fails leaves no new file behind."""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import zipfile
from dataclasses import replace

import httpx
import pytest
from sqlalchemy import select
from support.backup import blob, empty
from support.images import png
from support.mcp_clients import make_key
from support.users import make_user

from fable_core.db.models import Note
from fable_core.errors import Conflict, InvalidInput
from fable_core.outside.images.store import stored_at
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app


async def test_a_note_and_its_image_survive_a_restore_into_a_used_instance(fable: Fable, alice: Caller) -> None:
    picture = png(11, 22, 33)
    image = await fable.call("upload_image", {"content": picture, "alt": "tomato"}, alice)
    await fable.call("create_note", {"title": "Harvest", "body": f"The first: {image['markdown']}"}, alice)
    data = await blob(fable, "backup_instance", alice)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        (image_sha,) = json.loads(zf.read("manifest.json"))["images"]
        assert zf.read(f"images/{image_sha}") == picture
    shutil.rmtree(stored_at(fable.settings.fable_data_dir, image_sha).parent)  # a new machine: no files

    await empty(fable)  # an instance in use: carol's images and notes take the first ids
    carol = await make_user(fable, "carol", role="admin")
    for i in range(3):
        await fable.call("upload_image", {"content": png(i, i, i)}, carol)
        await fable.call("create_note", {"title": f"Carol {i}", "body": ""}, carol)
    restored = await fable.call("restore_backup", {"archive_file": data}, carol)
    assert restored["image_files"] == 1 and restored["rows"]["images"] == 1
    async with fable.db.reading() as session:
        body, owner = (await session.execute(select(Note.body, Note.user_id).where(Note.title == "Harvest"))).one()
    new_id = int(re.search(r"/api/images/(\d+)", body).group(1))  # type: ignore[union-attr]
    assert new_id != image["id"]
    key = await make_key(fable, replace(alice, user_id=owner))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(fable)), base_url="http://localhost",
                                 headers={"Authorization": f"Bearer {key}"}) as http:
        served = await http.get(f"/api/images/{new_id}")
    assert served.status_code == 200 and served.content == picture


async def test_a_failed_restore_leaves_no_new_image_file(fable: Fable, alice: Caller) -> None:
    picture = png(77, 88, 99)
    await fable.call("upload_image", {"content": picture}, alice)
    await fable.call("set_setting", {"key": "assistant_name", "value": "Sage"}, alice)
    data = await blob(fable, "backup_mine", alice)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        (sha,) = json.loads(zf.read("manifest.json"))["images"]
    path = stored_at(fable.settings.fable_data_dir, sha)
    path.unlink()
    with pytest.raises(Conflict):  # her setting is still there: the restore clashes, nothing written
        await fable.dispatcher.run("restore_backup", {"archive_file": data}, alice)
    assert not path.exists()


def _tampered(data: bytes, html: bytes) -> tuple[bytes, bytes]:
    """Two archives made by hand from ``data``: one carrying a file that is not an image, one
    whose image row claims to be HTML (its file left out)."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        members = {name: zf.read(name) for name in zf.namelist() if name != "manifest.json"}
    sha = hashlib.sha256(html).hexdigest()
    extra = {**members, f"images/{sha}": html}
    rows = [json.loads(line) for line in members["tables/images.jsonl"].splitlines()]
    at = manifest["tables"]["images"]["columns"].index("content_type")
    for row in rows:
        row[at] = "text/html"
    table = "".join(json.dumps(r) + "\n" for r in rows).encode()
    relabelled = {**{k: v for k, v in members.items() if not k.startswith("images/")},
                  "tables/images.jsonl": table}
    tables = {**manifest["tables"], "images": {**manifest["tables"]["images"],
                                               "sha256": hashlib.sha256(table).hexdigest(), "bytes": len(table)}}

    def zipped(content: dict[str, bytes], man: dict[str, object]) -> bytes:
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as zf:
            zf.writestr("manifest.json", json.dumps(man))
            for name, value in content.items():
                zf.writestr(name, value)
        return out.getvalue()

    return (zipped(extra, {**manifest, "images": {**manifest["images"], sha: len(html)}}),
            zipped(relabelled, {**manifest, "tables": tables, "images": {}}))


async def test_an_archive_cannot_put_anything_but_images_in_the_store(fable: Fable, alice: Caller) -> None:
    await fable.call("upload_image", {"content": png(5, 150, 250)}, alice)
    data = await blob(fable, "backup_mine", alice)
    html = b"<html><script>alert(document.cookie)</script></html>"
    not_an_image, relabelled = _tampered(data, html)
    await empty(fable)
    alice = await make_user(fable, "alice")
    for archive, why in ((not_an_image, "is not a PNG"), (relabelled, "content type 'text/html'")):
        with pytest.raises(InvalidInput, match=why):
            await fable.dispatcher.run("restore_backup", {"archive_file": archive}, alice)
    assert not stored_at(fable.settings.fable_data_dir, hashlib.sha256(html).hexdigest()).exists()
    restored = await fable.call("restore_backup", {"archive_file": data}, alice)
    assert restored["rows"]["images"] == 1
