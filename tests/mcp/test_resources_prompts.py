"""Resources (notes, projects, update notifications), prompts, completions, logging/setLevel."""

from __future__ import annotations

import base64

import anyio
import mcp_types as types
import pytest
from mcp.client.subscriptions import ResourceUpdated
from mcp.shared.exceptions import MCPError
from support.mcp_clients import ResourceUpdates
from support.pace import scaled

from fable_core.db.models import Project
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def test_projects_then_notes_are_listed_newest_first_and_templated(connect, call) -> None:
    project = await call("create_project", title="Garden")
    first = await call("create_note", title="Seeds", tags=["home"], project_id=project["id"])
    second = await call("create_note", title="Buy compost", status="todo")
    await call("update_note", note_id=first["id"], body="edited last: the order stays by id")
    async with connect() as client:
        listed = await client.list_resources()
        templates = (await client.list_resource_templates()).resource_templates
    assert [r.uri for r in listed.resources] == [f"fable://projects/{project['id']}",
                                                 f"fable://notes/{second['id']}", f"fable://notes/{first['id']}"]
    assert listed.next_cursor is None
    compost = listed.resources[1]
    assert compost.name == "Buy compost" and compost.mime_type == "text/markdown"
    assert compost.description == f"task {second['id']} · status: todo"
    assert listed.resources[2].description == f"note {first['id']} · project: {project['id']} · tags: home"
    assert [t.uri_template for t in templates] == ["fable://notes/{id}", "fable://projects/{id}"]


async def _walk(client, first_page_done=None) -> tuple[list[str], list[int]]:
    """Every page of resources/list: the URIs in order and the size of each page."""
    uris: list[str] = []
    sizes: list[int] = []
    cursor = None
    while True:
        page = await client.list_resources(cursor=cursor)
        uris += [r.uri for r in page.resources]
        sizes.append(len(page.resources))
        if first_page_done is not None and len(sizes) == 1:
            await first_page_done()
        if page.next_cursor is None:
            return uris, sizes
        cursor = page.next_cursor


async def test_resources_are_paged_with_no_gaps_or_duplicates(connect_fast, call, bob: Caller) -> None:
    projects = [await call("create_project", title=f"Project {i}") for i in range(3)]
    notes = [await call("create_note", title=f"Note {i}") for i in range(110)]
    await call("create_note", title="Bob's", as_=bob)
    expected = ([f"fable://projects/{p['id']}" for p in reversed(projects)]
                + [f"fable://notes/{n['id']}" for n in reversed(notes)])
    added: list[dict] = []

    async def meanwhile() -> None:  # between the first and second page
        added.append(await call("create_note", title="Created during the walk"))
        await call("update_note", note_id=notes[0]["id"], body="edited during the walk")
        await call("update_note", note_id=notes[60]["id"], body="edited during the walk")

    async with connect_fast() as client:
        walked, sizes = await _walk(client, meanwhile)
        again, _ = await _walk(client)
    assert sizes == [50, 50, 13]
    assert walked == expected  # complete, once each, in order
    assert again == [*expected[:3], f"fable://notes/{added[0]['id']}", *expected[3:]]  # a new walk sees it


async def test_a_full_page_of_projects_continues_with_the_notes(connect_fast, call) -> None:
    for i in range(50):
        await call("create_project", title=f"Project {i}")
    note = await call("create_note", title="The only note")
    async with connect_fast() as client:
        walked, sizes = await _walk(client)
        first = await client.list_resources()
    assert sizes == [50, 1] and walked[-1] == f"fable://notes/{note['id']}"
    assert first.next_cursor is not None


@pytest.mark.parametrize("cursor", [
    "not a cursor",
    "",
    "eyJrIjoibm90ZXM6dXBkYXRlZCIsInAiOlsiMjAyNi0wMS0wMSIsMV19",  # a list_notes cursor, not ours
    "eyJrIjoibWNwOnJlc291cmNlcyIsInAiOlsidGFza3MiLDFdfQ",  # our kind, unknown section
    "eyJrIjoibWNwOnJlc291cmNlcyIsInAiOlsibm90ZXMiLDk5OTk5OTk5OTk5XX0",  # id beyond any row
    "eyJrIjoibWNwOnJlc291cmNlcyIsInAiOlsibm90ZXMiLHRydWVdfQ",  # id not an integer
    base64.urlsafe_b64encode(b"[" * 100_000).decode(),  # nested past the recursion limit
    base64.urlsafe_b64encode(b"[" * 1_500).decode(),  # as deep, yet short enough to be decoded
], ids=["text", "empty", "another-listing", "unknown-section", "id-too-big", "id-not-int", "deeply-nested",
        "nested-within-the-length"])
async def test_a_bad_cursor_is_invalid_params(connect_fast, cursor: str) -> None:
    async with connect_fast() as client:
        with pytest.raises(MCPError) as failed:
            await client.list_resources(cursor=cursor)
    assert failed.value.error.code == -32602
    assert "cursor is not valid" in failed.value.error.message


async def test_read_note_and_project_resources(connect_fast, call) -> None:
    project = await call("create_project", title="Garden", goal="Grow tomatoes")
    note = await call("create_note", title="Seeds", body="Order *early*.", tags=["home"],
                      project_id=project["id"])
    async with connect_fast() as client:
        note_text = (await client.read_resource(f"fable://notes/{note['id']}")).contents[0]
        project_text = (await client.read_resource(f"fable://projects/{project['id']}")).contents[0]
    assert note_text.mime_type == "text/markdown"
    assert note_text.text == (f"# Seeds\n\n_note {note['id']} · project: {project['id']} · tags: home_\n\n"
                              "Order *early*.\n")
    assert project_text.text.startswith("# Garden\n") and "## Goal\n\nGrow tomatoes" in project_text.text
    assert f"- [Seeds](fable://notes/{note['id']})" in project_text.text


@pytest.mark.parametrize("uri", ["fable://notes/999", "fable://tasks/1", "https://example.com/"])
async def test_unknown_resources_are_resource_not_found(connect_fast, uri: str) -> None:
    async with connect_fast() as client:
        with pytest.raises(MCPError) as failed:
            await client.read_resource(uri)
    assert failed.value.error.code == -32602 and failed.value.error.data == {"uri": uri}  # 2026-07-28: SEP-2164


async def test_another_users_note_is_not_a_resource(connect_fast, call, bob: Caller) -> None:
    note = await call("create_note", title="Private")
    async with connect_fast(as_=bob) as client:
        with pytest.raises(MCPError, match=f"note {note['id']} not found"):
            await client.read_resource(f"fable://notes/{note['id']}")


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_subscribed_note_change_sends_resources_updated(connect, call, bob: Caller) -> None:
    """Over stdio the server is another process: the changes reach it through the database."""
    watched = await call("create_note", title="Watched")
    other = await call("create_note", title="Groceries")
    bobs = await call("create_note", title="Watched", as_=bob)
    updates = ResourceUpdates()

    async with connect(mode="legacy", message_handler=updates) as client:
        await client.subscribe_resource(f"fable://notes/{watched['id']}")
        await client.subscribe_resource(f"fable://notes/{bobs['id']}")  # not hers: never fires
        await call("update_note", note_id=bobs["id"], body="bob's change", as_=bob)
        await call("update_note", note_id=other["id"], body="not watched")
        await call("update_note", note_id=watched["id"], body="changed")
        with anyio.fail_after(scaled(10)):
            await updates.arrived.wait()
        await client.unsubscribe_resource(f"fable://notes/{watched['id']}")
        await call("update_note", note_id=watched["id"], body="changed again")
        await client.send_ping()  # a round trip: a notification sent before it would have arrived
    assert updates.uris == [f"fable://notes/{watched['id']}"]


async def test_listen_stream_hears_only_its_users_changes(connect, call, bob: Caller) -> None:
    mine = await call("create_note", title="Mine")
    bobs = await call("create_note", title="Bob's", as_=bob)
    async with connect() as client:
        uris = [f"fable://notes/{mine['id']}", f"fable://notes/{bobs['id']}"]
        async with client.listen(resource_subscriptions=uris) as stream:
            await call("update_note", note_id=bobs["id"], body="x", as_=bob)
            await call("delete_note", note_id=mine["id"])
            with anyio.fail_after(scaled(10)):
                event = await anext(aiter(stream))
    assert event == ResourceUpdated(uri=f"fable://notes/{mine['id']}")


async def test_prompts_are_listed_with_descriptions_and_arguments(connect) -> None:
    async with connect() as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    assert set(prompts) == {"daily_review", "summarise_project", "note_to_tasks"}
    assert all(p.description and p.title for p in prompts.values())
    assert [(a.name, a.required) for a in prompts["summarise_project"].arguments] == [("project", True)]
    assert [(a.name, a.required) for a in prompts["daily_review"].arguments] == [("date", False), ("tag", False)]


async def test_daily_review_prompt_brings_the_days_tasks(connect_fast, call) -> None:
    await call("create_note", title="Pay rent", due_date="2026-03-01")
    await call("create_note", title="Later thing", due_date="2026-04-01")
    await call("create_note", title="Doing it", status="in_progress")
    async with connect_fast() as client:
        prompt = await client.get_prompt("daily_review", {"date": "2026-03-02"})
    text = prompt.messages[0].content.text
    due = text.split("Tasks due by today or overdue:")[1].split("In progress:")[0]
    assert "Pay rent" in due and "Later thing" not in due
    assert "Doing it" in text.split("In progress:")[1] and "complete_task" in text


@pytest.mark.parametrize("day", ["9999-12-31", "tomorrow"])
async def test_a_day_that_cannot_be_reviewed_is_invalid_params(connect_fast, day: str) -> None:
    async with connect_fast() as client:
        with pytest.raises(MCPError) as failed:
            await client.get_prompt("daily_review", {"date": day})
    assert failed.value.error.code == -32602
    assert failed.value.error.message.startswith(f"invalid_input: date {day!r}")


async def test_summarise_project_prompt_resolves_the_name(connect_fast, call) -> None:
    project = await call("create_project", title="Website redesign", goal="Launch by May")
    await call("create_note", title="Pick fonts", project_id=project["id"], status="todo")
    async with connect_fast() as client:
        prompt = await client.get_prompt("summarise_project", {"project": "website"})
        with pytest.raises(MCPError, match="needs argument\\(s\\): project"):
            await client.get_prompt("summarise_project", {})
        with pytest.raises(MCPError, match="not_found: no project matches 'gardening'"):
            await client.get_prompt("summarise_project", {"project": "gardening"})
    text = prompt.messages[0].content.text
    assert "'Website redesign'" in text and "Launch by May" in text and "Pick fonts" in text


async def test_note_to_tasks_embeds_the_note(connect_fast, call) -> None:
    note = await call("create_note", title="Meeting with Sam", body="- send the contract\n- book a room")
    async with connect_fast() as client:
        prompt = await client.get_prompt("note_to_tasks", {"note": "meeting with sam"})
    embedded, ask = prompt.messages
    assert embedded.content.type == "resource"
    assert embedded.content.resource.uri == f"fable://notes/{note['id']}"
    assert "send the contract" in embedded.content.resource.text
    assert f"parent_id={note['id']}" in ask.content.text


async def test_note_to_tasks_finds_the_note_by_exact_title_first_then_the_closest(connect_fast, call) -> None:
    exact = await call("create_note", title="Plan the offsite")
    await call("create_note", title="Quarterly budget review")
    async with connect_fast() as client:
        by_title = await client.get_prompt("note_to_tasks", {"note": "PLAN the offsite"})
        by_typo = await client.get_prompt("note_to_tasks", {"note": "quartely budgt review"})
        with pytest.raises(MCPError, match="no note titled 'zzzz qqqq'"):
            await client.get_prompt("note_to_tasks", {"note": "zzzz qqqq"})
    assert by_title.messages[0].content.resource.uri == f"fable://notes/{exact['id']}"
    assert "'Quarterly budget review'" in by_typo.messages[1].content.text


async def test_completions_offer_projects_tags_notes_and_ids(connect, call) -> None:
    await call("create_project", title="Website redesign")
    await call("create_project", title="Garden")
    note = await call("create_note", title="Weekly review", tags=["work/acme", "home"])
    async with connect() as client:
        def ref(name: str) -> types.PromptReference:
            return types.PromptReference(name=name)

        projects = await client.complete(ref("summarise_project"), {"name": "project", "value": "web"})
        tags = await client.complete(ref("daily_review"), {"name": "tag", "value": "wo"})
        notes = await client.complete(ref("note_to_tasks"), {"name": "note", "value": "week"})
        ids = await client.complete(types.ResourceTemplateReference(uri="fable://notes/{id}"),
                                    {"name": "id", "value": ""})
        unknown = await client.complete(ref("test_prompt_with_arguments"), {"name": "arg1", "value": "x"})
    assert projects.completion.values == ["Website redesign"]
    assert tags.completion.values == ["work/acme"]
    assert notes.completion.values == ["Weekly review"]
    assert ids.completion.values == [str(note["id"])]
    assert unknown.completion.values == []


@pytest.mark.parametrize(("ref", "argument", "value"), [
    (types.PromptReference(name="daily_review"), "tag", "w" * 65),  # longer than any tag
    (types.PromptReference(name="summarise_project"), "project", "w" * 10_000),
    (types.PromptReference(name="note_to_tasks"), "note", "w" * 10_000),
    (types.ResourceTemplateReference(uri="fable://notes/{id}"), "id", "1" * 10_000),
    (types.ResourceTemplateReference(uri="fable://projects/{id}"), "id", "1" * 10_000),
], ids=["tag", "project", "note", "note-id", "project-id"])
async def test_a_value_too_long_to_match_completes_to_nothing(
    connect_fast, call, ref: object, argument: str, value: str
) -> None:
    project = await call("create_project", title="w" * 200)
    await call("create_note", title="w" * 200, tags=["w" * 64], project_id=project["id"])
    async with connect_fast() as client:
        answer = await client.complete(ref, {"name": argument, "value": value})
    assert answer.completion.values == [] and not answer.completion.has_more


async def test_completions_say_when_there_are_more_than_one_answer_holds(connect_fast, call) -> None:
    tags = [f"tag{i:03}" for i in range(131)]
    for start in range(0, 131, 50):
        await call("create_note", title=f"Tagged {start}", tags=tags[start:start + 50])
    async with connect_fast() as client:
        every = await client.complete(types.PromptReference(name="daily_review"), {"name": "tag", "value": ""})
        few = await client.complete(types.PromptReference(name="daily_review"), {"name": "tag", "value": "tag13"})
    assert len(every.completion.values) == 100 and every.completion.has_more is True
    assert every.completion.total is None  # not counted: more than one answer holds
    assert few.completion.values == ["tag130"] and few.completion.total == 1 and not few.completion.has_more


async def test_note_id_completion_searches_every_note(connect_fast, call) -> None:
    notes = [await call("create_note", title=f"Note {i}") for i in range(120)]
    newest_first = [str(n["id"]) for n in reversed(notes)]
    template = types.ResourceTemplateReference(uri="fable://notes/{id}")
    async with connect_fast() as client:
        ones = await client.complete(template, {"name": "id", "value": "1"})
        every = await client.complete(template, {"name": "id", "value": ""})
    assert ones.completion.values == [i for i in newest_first if i.startswith("1")]
    assert "1" in ones.completion.values and not ones.completion.has_more
    assert every.completion.values == newest_first[:100] and every.completion.has_more is True


async def test_project_completion_searches_every_project(connect_fast, call, fable: Fable, alice: Caller) -> None:
    projects = [Project(user_id=alice.user_id, title=f"Project {i:03}") for i in range(200)]
    projects.append(Project(user_id=alice.user_id, title="Zebra crossing"))
    async with fable.db.transaction() as session:
        session.add_all(projects)
    ones_newest_first = sorted((p.id for p in projects if str(p.id).startswith("1")), reverse=True)
    prompt = types.PromptReference(name="summarise_project")
    template = types.ResourceTemplateReference(uri="fable://projects/{id}")
    async with connect_fast() as client:
        zebra = await client.complete(prompt, {"name": "project", "value": "cross"})
        every = await client.complete(prompt, {"name": "project", "value": ""})
        ones = await client.complete(template, {"name": "id", "value": "1"})
    assert zebra.completion.values == ["Zebra crossing"]
    assert every.completion.values == [f"Project {i:03}" for i in range(100)] and every.completion.has_more
    assert len(ones_newest_first) > 100  # 1, 10-19, 100-199
    assert ones.completion.values == [str(i) for i in ones_newest_first[:100]] and ones.completion.has_more


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_logging_set_level_is_accepted(connect_fast) -> None:
    async with connect_fast(mode="legacy") as client:
        assert client.server_capabilities.logging is not None
        assert await client.set_logging_level("warning") == types.EmptyResult()


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
@pytest.mark.parametrize("mode", ["legacy", "modern"])
async def test_text_the_database_refuses_is_invalid_params_and_shows_no_sql(connect_fast, mode: str) -> None:
    """A NUL byte reaches PostgreSQL through the completion lookup, which bypasses the tools; the
    client must get the invalid_input a tool gives, never the driver's message with the SQL."""
    args = {"mode": "legacy"} if mode == "legacy" else {}
    async with connect_fast(**args) as client:
        with pytest.raises(MCPError) as completing:
            await client.complete(types.PromptReference(name="note_to_tasks"), {"name": "note", "value": "a\x00b"})
    error = completing.value.error
    assert error.code == -32602
    assert error.message.startswith("invalid_input: invalid value")
    assert "SELECT" not in error.message and "sqlalchemy" not in error.message


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_a_digit_that_is_not_ascii_is_a_name_not_an_id(connect_fast) -> None:
    async with connect_fast(mode="legacy") as client:
        with pytest.raises(MCPError, match="not_found: no project matches '²'"):
            await client.get_prompt("summarise_project", {"project": "²"})
        with pytest.raises(MCPError, match="no note titled '²'"):
            await client.get_prompt("note_to_tasks", {"note": "²"})
