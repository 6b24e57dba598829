"""Importing ChatGPT and Claude exports: the thread the user saw (ChatGPT's mapping tree), text
only, both kinds recognised by shape; a dry run stores nothing, a rerun creates nothing; junk is
refused whole."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from support.importers import Rest, zipped

from fable_core.errors import InvalidInput
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


def node(node_id: str, parent: str | None, children: list[str], role: str | None, text: str | None = None,
         **extra: Any) -> dict[str, Any]:
    message = None if role is None else {
        "id": node_id, "author": {"role": role}, "create_time": 1_700_000_000 + len(node_id),
        "content": {"content_type": "text", "parts": [text or ""]}, **extra}
    return {"id": node_id, "parent": parent, "children": children, "message": message}


CHATGPT = {
    "id": "c-1", "conversation_id": "c-1", "title": "Bread  baking", "create_time": 1_700_000_000.5,
    "current_node": "a2",
    "mapping": {
        "root": node("root", None, ["sys"], None),
        "sys": node("sys", "root", ["u1"], "system", "You are ChatGPT"),
        "u1": node("u1", "sys", ["a1", "a2"], "user", "How long to proof?"),
        "a1": node("a1", "u1", [], "assistant", "An abandoned branch"),
        "a2": node("a2", "u1", [], "assistant", "About an hour."),
    },
}
CLAUDE = {
    "uuid": "k-1", "name": "Tea", "created_at": "2024-03-01T10:00:00Z",
    "chat_messages": [
        {"uuid": "m1", "sender": "human", "text": "Green or black?", "created_at": "2024-03-01T10:00:00Z"},
        {"uuid": "m2", "sender": "assistant", "text": "",
         "content": [{"type": "text", "text": "Green, at 80°C."}], "created_at": "2024-03-01T10:00:05Z"},
    ],
}


async def test_chatgpt_zip_and_claude_json_import_once(fable: Fable, alice: Caller, bob: Caller, rest: Rest) -> None:
    export = zipped({"conversations.json": json.dumps([CHATGPT, {"title": "junk"}]), "user.json": "{}"})
    dry = await fable.call("import_conversations", {"content": export}, alice)
    assert dry["dry_run"] and dry["created"] == 1 and dry["skipped_items"] == [
        {"item": "#1", "reason": "neither a ChatGPT nor a Claude conversation"}]
    assert (await fable.call("list_conversations", {}, alice))["items"] == []

    done = await fable.call("import_conversations", {"content": export, "dry_run": False}, alice)
    chat_id = done["created_items"][0]["id"]
    chat = await fable.call("get_conversation", {"conversation_id": chat_id}, alice)
    assert chat["title"] == "Bread baking"
    assert [(m["role"], m["content"]) for m in chat["messages"]] == [
        ("user", "How long to proof?"), ("assistant", "About an hour.")]

    async with rest(alice) as http:
        answer = await http.post("/import/conversations", params={"dry_run": "false"},
                                 content=json.dumps([CLAUDE]).encode(),
                                 headers={"content-type": "application/octet-stream"})
        assert answer.status_code == 200, answer.text
        claude_id = answer.json()["created_items"][0]["id"]
        again = await http.post("/import/conversations", params={"dry_run": "false"},
                                json={"content": base64.b64encode(json.dumps([CLAUDE, CHATGPT]).encode()).decode()})
        assert again.json()["created"] == 0 and {line["reason"] for line in again.json()["skipped_items"]} == {
            "imported before"}
    tea = await fable.call("get_conversation", {"conversation_id": claude_id}, alice)
    assert [(m["role"], m["content"]) for m in tea["messages"]] == [
        ("user", "Green or black?"), ("assistant", "Green, at 80°C.")]
    assert len((await fable.call("list_conversations", {}, alice))["items"]) == 2
    # another user's import is their own: alice's provenance does not skip it
    theirs = await fable.call("import_conversations", {"content": json.dumps([CLAUDE]).encode(), "dry_run": False},
                              bob)
    assert theirs["created"] == 1 and theirs["created_items"][0]["id"] != claude_id


async def test_a_malformed_conversation_is_skipped_with_why(fable: Fable, alice: Caller) -> None:
    bad = {"id": "x", "mapping": {"n": {"parent": None, "children": [], "message": {"author": "user"}}},
           "current_node": "n"}
    report = await fable.call("import_conversations", {"content": json.dumps([bad, CLAUDE]).encode(),
                                                       "dry_run": False}, alice)
    assert report["created"] == 1 and report["skipped_items"][0]["reason"].startswith("malformed conversation")


@pytest.mark.parametrize(("content", "message"), [
    (b"{not json", "not valid JSON"),
    (b'{"a": 1}', "should be a list"),
    (zipped({"other.json": "[]"}), "no conversations.json"),
])
async def test_junk_is_refused_whole(fable: Fable, alice: Caller, content: bytes, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        await fable.call("import_conversations", {"content": content, "dry_run": False}, alice)
    assert (await fable.call("list_conversations", {}, alice))["items"] == []


async def test_code_images_and_attachments_are_kept_or_reported_never_dropped_silently(
        fable: Fable, alice: Caller) -> None:
    """Issue 37: a ChatGPT turn with an image (multimodal), code the model ran, a tool's output; a
    Claude message with a pasted file and a tool call. Text, the code (fenced) and the pasted
    file's text arrive; an image is named in place; what Fable does not keep is reported."""
    indented = "def rise(hours):\n    return hours * 2\n"
    chatgpt = {
        "conversation_id": "c-9", "title": "Dough", "create_time": 1_700_000_000, "current_node": "o1",
        "mapping": {
            "root": node("root", None, ["u1"], None),
            "u1": {"id": "u1", "parent": "root", "children": ["c1"], "message": {
                "id": "u1", "author": {"role": "user"}, "create_time": 1_700_000_001,
                "content": {"content_type": "multimodal_text", "parts": [
                    {"content_type": "image_asset_pointer", "asset_pointer": "file-service://x"},
                    "What is wrong with this loaf?"]}}},
            "c1": {"id": "c1", "parent": "u1", "children": ["o1"], "message": {
                "id": "c1", "author": {"role": "assistant"}, "create_time": 1_700_000_002,
                "content": {"content_type": "code", "language": "python", "text": indented}}},
            "o1": {"id": "o1", "parent": "c1", "children": [], "message": {
                "id": "o1", "author": {"role": "assistant"}, "create_time": 1_700_000_003,
                "content": {"content_type": "execution_output", "text": "4"}}},
        },
    }
    claude = {
        "uuid": "k-9", "name": "Recipe", "created_at": "2024-03-01T10:00:00Z",
        "chat_messages": [
            {"uuid": "m1", "sender": "human", "text": "Scale this recipe", "created_at": "2024-03-01T10:00:00Z",
             "attachments": [{"file_name": "recipe.txt", "extracted_content": "flour 500g\nwater 350g"}]},
            {"uuid": "m2", "sender": "assistant", "text": "", "created_at": "2024-03-01T10:00:05Z",
             "content": [{"type": "tool_use", "name": "calc"}, {"type": "text", "text": "Doubled."}]},
        ],
    }
    done = await fable.call("import_conversations", {"content": json.dumps([chatgpt, claude]).encode(),
                                                     "dry_run": False}, alice)
    assert done["created"] == 2
    dough, recipe = [await fable.call("get_conversation", {"conversation_id": line["id"]}, alice)
                     for line in done["created_items"]]
    assert [(m["role"], m["content"]) for m in dough["messages"]] == [
        ("user", "[image not imported]\nWhat is wrong with this loaf?"),
        ("assistant", f"```python\n{indented}\n```")]
    assert [(m["role"], m["content"]) for m in recipe["messages"]] == [
        ("user", "Scale this recipe\n\nrecipe.txt:\n```\nflour 500g\nwater 350g\n```"),
        ("assistant", "Doubled.")]
    reported = {w["item"]: w["reason"] for w in done["warnings"]}
    assert reported == {"c-9": "imported without what Fable does not keep: 1 execution_output, 1 image",
                        "k-9": "imported without what Fable does not keep: 1 tool_use"}
