from __future__ import annotations


async def test_create_then_read_note(call) -> None:
    created = await call("create_note", title="First", body="Hello [[Second]]", tags=["Work/Acme"])
    assert created["kind"] == "note" and created["tags"] == ["work/acme"]
    read = await call("read_note", note_id=created["id"])
    assert read["body"] == "Hello [[Second]]"
    second = await call("create_note", title="Second")
    links = await call("get_backlinks", note_id=second["id"])
    assert [i["id"] for i in links["items"]] == [created["id"]]
