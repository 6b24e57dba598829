"""note_graph: notes, the notes they link to, their tags (with parent tags) and projects, as
compact nodes and links; filtered by tag or project, capped at a limit (newest first, saying so),
only what the caller may read."""

from __future__ import annotations

import pytest

from fable_core.errors import InvalidInput, NotFound
from fable_core.tools.caller import Caller


async def test_notes_tags_and_projects_with_their_links(call, bob: Caller) -> None:
    project = await call("create_project", title="Garden")
    a = await call("create_note", title="Tomatoes", body="See [[Soil]] and [[Nowhere]]", tags=["garden/veg"],
                   project_id=project["id"])
    b = await call("create_note", title="Soil", body="Back to [[Tomatoes]]", tags=["garden"])
    await call("create_note", title="Bob's secret", body="[[Soil]]", as_=bob)
    graph = await call("note_graph")
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert nodes == {
        f"n{a['id']}": {"id": f"n{a['id']}", "label": "Tomatoes", "kind": "note"},
        f"n{b['id']}": {"id": f"n{b['id']}", "label": "Soil", "kind": "note"},
        "t:garden": {"id": "t:garden", "label": "#garden", "kind": "tag"},
        "t:garden/veg": {"id": "t:garden/veg", "label": "#garden/veg", "kind": "tag"},
        f"p{project['id']}": {"id": f"p{project['id']}", "label": "Garden", "kind": "project"},
    }
    assert sorted(map(tuple, graph["links"])) == sorted([
        (f"n{a['id']}", f"n{b['id']}"), (f"n{b['id']}", f"n{a['id']}"),
        (f"n{a['id']}", "t:garden/veg"), ("t:garden/veg", "t:garden"), (f"n{b['id']}", "t:garden"),
        (f"n{a['id']}", f"p{project['id']}")])
    assert "truncated" not in graph


async def test_filters_and_the_limit(call) -> None:
    project = await call("create_project", title="Kitchen")
    for i in range(3):
        await call("create_note", title=f"Recipe {i}", tags=["food/baking"], project_id=project["id"])
    await call("create_note", title="Other", tags=["misc"])
    by_tag = await call("note_graph", tag="food")
    assert {n["label"] for n in by_tag["nodes"] if n["kind"] == "note"} == {"Recipe 0", "Recipe 1", "Recipe 2"}
    capped = await call("note_graph", project_id=project["id"], limit=2)
    assert [n["label"] for n in capped["nodes"] if n["kind"] == "note"] == ["Recipe 2", "Recipe 1"]
    assert capped["truncated"] is True


async def test_bad_input_is_refused(call, bob: Caller, api, alice: Caller) -> None:
    hidden = await call("create_project", title="Hidden", as_=bob)
    with pytest.raises(NotFound):
        await call("note_graph", project_id=hidden["id"])
    for args in ({"limit": 0}, {"limit": 5001}, {"tag": "bad tag!"}):
        with pytest.raises(InvalidInput):
            await call("note_graph", **args)
    async with api(alice) as http:
        assert (await http.get("/graph")).status_code == 200
        assert (await http.get("/graph", params={"limit": "lots"})).status_code == 422
        assert (await http.get("/graph", params={"project_id": str(hidden["id"])})).status_code == 404


async def test_a_shared_note_shows_without_its_unshared_project(call, alice: Caller, bob: Caller) -> None:
    secret = await call("create_project", title="Bob's secret project", as_=bob)
    note = await call("create_note", title="Shared plan", tags=["plans"], project_id=secret["id"], as_=bob)
    await call("share", note_id=note["id"], with_user="alice", as_=bob)
    graph = await call("note_graph")
    assert graph == {"nodes": [{"id": f"n{note['id']}", "label": "Shared plan", "kind": "note"},
                               {"id": "t:plans", "label": "#plans", "kind": "tag"}],
                     "links": [[f"n{note['id']}", "t:plans"]]}
    assert (await call("suggest_titles", text="shared plan"))["items"][0]["id"] == note["id"]
    assert (await call("tag_tree")) == {"items": [{"tag": "plans", "count": 1}]}
