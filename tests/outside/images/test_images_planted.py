"""An image is readable through a note only when its owner wrote the embed into it.

Security round 3: bob, an editor of one of alice's notes, appended ``/api/images/1`` ...
``/api/images/29`` to it and could then read every private image of alice's, past and future.
Now who wrote each embed is recorded (``note_images``), an embed keeps its first writer (so
alice's next save of the note does not adopt bob's), and a deleted note brought back from the
trash keeps who wrote what.
"""

from __future__ import annotations

import pytest
from support.images import png

from fable_core.errors import NotFound
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def test_an_editor_cannot_plant_the_owners_image_ids_to_read_them(fable: Fable, alice: Caller,
                                                                         bob: Caller) -> None:
    private = await fable.call("upload_image", {"content": png(10, 20, 30)}, alice)
    shown = await fable.call("upload_image", {"content": png(30, 20, 10)}, alice)
    note = await fable.call("create_note", {"title": "Kitchen", "body": f"![plan](/api/images/{shown['id']})"}, alice)
    await fable.call("share", {"note_id": note["id"], "with_user": "bob", "permission": "editor"}, alice)
    assert (await fable.dispatcher.run("get_image", {"image_id": shown["id"]}, bob)) is not None  # alice embedded it

    planted = f"![plan](/api/images/{shown['id']})\n![x](/api/images/{private['id']})"
    await fable.call("update_note", {"note_id": note["id"], "body": planted}, bob)
    with pytest.raises(NotFound):
        await fable.dispatcher.run("get_image", {"image_id": private["id"]}, bob)
    await fable.call("update_note", {"note_id": note["id"], "body": planted + "\nalice's edit"}, alice)
    with pytest.raises(NotFound):  # her later save does not make bob's embed hers
        await fable.dispatcher.run("get_image", {"image_id": private["id"]}, bob)

    await fable.call("delete_note", {"note_id": note["id"]}, alice)
    await fable.call("restore_note", {"trashed_id": note["id"]}, alice)  # a trashed note keeps its id
    await fable.call("share", {"note_id": note["id"], "with_user": "bob", "permission": "editor"}, alice)  # shares went
    with pytest.raises(NotFound):  # back from the trash, the embeds keep their writers
        await fable.dispatcher.run("get_image", {"image_id": private["id"]}, bob)
    assert (await fable.dispatcher.run("get_image", {"image_id": shown["id"]}, bob)) is not None
