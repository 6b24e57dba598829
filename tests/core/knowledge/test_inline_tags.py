"""Inline ``#tags``: a ``#tag`` written in a note's body is one of its tags on every reader (list_tags,
tag_tree, the ``tag:`` search operator, list_notes' filter), and goes when the text does."""

from __future__ import annotations

from fable_core.db.hashtags import MAX_TAGS, text_tags, with_text_tags
from fable_core.errors import InvalidInput


async def tagged(call, tag: str) -> dict[str, object]:
    """What each reader says about ``tag``: the notes listed and found, its counts."""
    listed = [n["title"] for n in (await call("list_notes", tag=tag))["items"]]
    found = [n["title"] for n in (await call("search_notes", query=f"tiles tag:{tag}"))["items"]]
    counts = {t["tag"]: t["count"] for t in (await call("list_tags"))["items"]}
    tree = (await call("tag_tree"))["items"]
    return {"listed": listed, "found": found, "count": counts.get(tag), "roots": [n["tag"] for n in tree]}


async def test_a_hashtag_in_the_text_is_a_tag_everywhere_and_goes_with_the_text(call) -> None:
    note = await call("create_note", title="Tiles", body="New tiles for the #kitchen, see #home/bath")
    assert note["tags"] == ["kitchen", "home/bath"]
    assert await tagged(call, "kitchen") == {"listed": ["Tiles"], "found": ["Tiles"], "count": 1,
                                              "roots": ["home", "kitchen"]}
    tree = (await call("tag_tree", prefix="home"))["items"]
    assert tree[0]["tag"] == "home" and tree[0]["children"][0]["tag"] == "home/bath"
    assert (await call("read_note", note_id=note["id"]))["inline_tags"] == ["kitchen", "home/bath"]

    edited = await call("edit_note", note_id=note["id"], operation="replace", find="#kitchen", text="kitchen")
    assert edited["tags"] == ["home/bath"]
    assert await tagged(call, "kitchen") == {"listed": [], "found": [], "count": None, "roots": ["home"]}
    updated = await call("update_note", note_id=note["id"], body="Now #Garden too")
    assert updated["tags"] == ["garden"]
    assert "inline_tags" not in await call("read_note", note_id=(await call("create_note", title="Plain"))["id"])


async def test_given_tags_survive_edits_of_the_text_and_text_tags_survive_setting_the_tags(call, fails) -> None:
    note = await call("create_note", title="Plan", body="Draft #idea", tags=["work"])
    assert note["tags"] == ["work", "idea"]
    assert (await call("update_note", note_id=note["id"], body="Final, no tag"))["tags"] == ["work"]
    assert (await call("update_note", note_id=note["id"], body="Final #idea"))["tags"] == ["work", "idea"]
    assert (await call("update_note", note_id=note["id"], tags=["later"]))["tags"] == ["later", "idea"]
    err = await fails(call("update_note", note_id=note["id"], remove_tags=["idea"], add_tags=["x"]), InvalidInput)
    assert "#idea" in err.message and "remove it from the body" in err.message
    after = await call("read_note", note_id=note["id"])
    assert after["tags"] == ["later", "idea"] and after["version"] == 4  # the refused call changed nothing
    # the text and the tag go together in one call
    both = await call("update_note", note_id=note["id"], body="Final", remove_tags=["idea"])
    assert both["tags"] == ["later"]
    # a tag given and written: the text decides
    assert (await call("update_note", note_id=note["id"], body="#later on"))["tags"] == ["later"]
    assert (await call("update_note", note_id=note["id"], body="gone"))["tags"] == []


async def test_code_headings_numbers_and_invalid_words_are_not_tags(call) -> None:
    body = ("# Heading\n## Sub #real\nInline `#code` and a#b and #2024 and (#paren)\n"
            "```\n#fenced\n```\n    #indented\n#" + "x" * 65 + " end\n#ok/ #a//b")
    note = await call("create_note", title="Rules", body=body)
    assert note["tags"] == ["real", "ok"]


async def test_a_tasks_text_tags_it_too(call) -> None:
    task = await call("create_note", title="Buy seeds", body="for the #garden", due_date="2026-12-24")
    assert task["kind"] == "task" and task["tags"] == ["garden"]
    listed = await call("list_tasks", tag="garden")
    assert [t["title"] for g in listed["groups"] for t in g["items"]] == ["Buy seeds"]
    done = await call("update_note", note_id=task["id"], body="for the yard")
    assert done["tags"] == []


async def test_imported_notes_and_restored_versions_keep_the_rule(call) -> None:
    result = await call("import_notes", notes=[{"title": "Imported", "body": "about #travel", "tags": ["misc"]}])
    note = await call("read_note", note_id=result["ids"][0])
    assert note["tags"] == ["misc", "travel"] and note["inline_tags"] == ["travel"]
    await call("update_note", note_id=note["id"], body="about nothing")
    restored = await call("restore_note_version", note_id=note["id"], version=1)
    assert restored["tags"] == ["misc", "travel"]


def test_text_tags_are_read_from_the_head_past_front_matter_and_capped() -> None:
    assert text_tags("---\ncolor: #ff0000\n---\nText #tag") == ["tag"]
    assert text_tags("x" * 70_000 + " #late") is None
    assert text_tags("no tags here") is None
    many = " ".join(f"#t{i}" for i in range(MAX_TAGS + 10))
    assert len(text_tags(many) or []) == MAX_TAGS
    assert with_text_tags([f"g{i}" for i in range(MAX_TAGS)], ["extra"]) == [f"g{i}" for i in range(MAX_TAGS)]
