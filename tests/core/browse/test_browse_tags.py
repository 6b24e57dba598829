"""tag_tree: the hierarchy the slashes make, each node counting the notes tagged with it or
below it (each note once), A-Z; a prefix narrows it; only notes the caller may read."""

from __future__ import annotations

import pytest

from fable_core.errors import InvalidInput
from fable_core.tools.caller import Caller


async def test_tags_form_a_tree_and_each_counts_its_notes_once(call, bob: Caller) -> None:
    await call("create_note", title="One", tags=["work/acme/q3", "work/acme", "home"])
    await call("create_note", title="Two", tags=["work/beta"])
    await call("create_note", title="Three", tags=["work"])
    await call("create_note", title="Four", tags=["zeta/deep/down"])
    await call("create_note", title="Bob's", tags=["work/bob"], as_=bob)
    tree = await call("tag_tree")
    assert tree == {"items": [
        {"tag": "home", "count": 1},
        {"tag": "work", "count": 3, "children": [
            {"tag": "work/acme", "count": 1, "children": [{"tag": "work/acme/q3", "count": 1}]},
            {"tag": "work/beta", "count": 1}]},
        {"tag": "zeta", "count": 1, "children": [
            {"tag": "zeta/deep", "count": 1, "children": [{"tag": "zeta/deep/down", "count": 1}]}]},
    ]}
    narrowed = await call("tag_tree", prefix="#Work/Acme")
    assert narrowed == {"items": [{"tag": "work/acme", "count": 1, "children": [{"tag": "work/acme/q3", "count": 1}]}]}
    assert await call("tag_tree", prefix="nothing") == {"items": []}


@pytest.mark.parametrize("args", [{"prefix": ""}, {"prefix": "x" * 65}])
async def test_bad_input_is_refused(call, args) -> None:
    with pytest.raises(InvalidInput):
        await call("tag_tree", **args)


async def test_rest_serves_it(call, api, alice: Caller) -> None:
    await call("create_note", title="One", tags=["a/b"])
    async with api(alice) as http:
        ok = await http.get("/tags/tree")
        assert ok.status_code == 200 and ok.json()["items"][0]["children"] == [{"tag": "a/b", "count": 1}]
        assert (await http.get("/tags/tree", params={"prefix": "y" * 80})).status_code == 422
