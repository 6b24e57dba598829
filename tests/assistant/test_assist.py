"""The note AI features against the fake model: drafts (accept, reject, conflicts), tag
suggestions, quick capture, project summaries and project search."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import select
from support.fake_llm import FakeLLM, Reply
from support.mcp_clients import data
from support.pace import scaled

from fable_core.db.models import Note, NoteDraft, Project
from fable_core.errors import Conflict, InvalidInput, NeedsConfirmation, NotFound, Unavailable
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

BODY = "# Plan\n\nWe go on monday.\n\n## Packing\n\nsocks, socks, more socks\n\n## Budget\n\n300 euro\n"


async def test_a_whole_note_draft_is_accepted(ai_fable: Fable, fake: FakeLLM, alice: Caller) -> None:
    note = await ai_fable.call("create_note", {"title": "Trip", "body": BODY}, alice)
    fake.plain_replies.append(Reply("# Plan\n\nMonday.\n"))
    draft = await ai_fable.call("assist_note", {"note_id": note["id"], "instruction": "make it shorter"}, alice)
    assert (draft["content"], draft["status"], draft["original"]) == ("# Plan\n\nMonday.", "ready", BODY)
    sent = fake.chat_bodies()[-1]["messages"][-1]["content"]
    assert "Instruction: make it shorter" in sent and "socks, socks" in sent
    unchanged = await ai_fable.call("read_note", {"note_id": note["id"]}, alice)
    assert unchanged["body"] == BODY, "the note waits for accept"
    assert (await ai_fable.call("get_note_draft", {"note_id": note["id"]}, alice))["content"] == "# Plan\n\nMonday."
    accepted = await ai_fable.call("accept_note_draft", {"note_id": note["id"]}, alice)
    assert accepted["version"] == 2
    assert (await ai_fable.call("read_note", {"note_id": note["id"]}, alice))["body"] == "# Plan\n\nMonday."
    gone = await ai_fable.call("get_note_draft", {"note_id": note["id"]}, alice)
    assert gone == {"note_id": note["id"], "status": "none"}, "no draft is no error"


async def test_a_draft_leaves_the_prompts_words_out_and_says_what_it_dropped(
    ai_fable: Fable, fake: FakeLLM, alice: Caller
) -> None:
    """Qwen 0.5B's drafts carried Fable's own prompt wording into the note, and dropped content
    ("Leaning towards Jon…") without a word: the wording is left out, and a draft that leaves out
    much of the note says how much, for the diff view to show."""
    body = ("- Jon: £4,200, can start in March\n- Ana: £3,900, booked until May\n"
            "- Leaning towards Jon because of the start date and his references from the neighbours")
    note = await ai_fable.call("create_note", {"title": "Kitchen quotes", "body": body}, alice)
    fake.plain_replies.append(Reply("Instruction: tidy this up\n\nThis is the whole of the note [[Kitchen quotes]]:"
                                    "\n\n- Jon: £4,200\n- Ana: £3,900"))
    draft = await ai_fable.call("assist_note", {"note_id": note["id"], "instruction": "tidy this up"}, alice)
    assert draft["content"] == "- Jon: £4,200\n- Ana: £3,900"
    assert draft["dropped"] >= 0.5
    assert (await ai_fable.call("get_note_draft", {"note_id": note["id"]}, alice))["dropped"] == draft["dropped"]
    framed = "This is the whole of the note, and a line of it that starts like the prompt's."
    note = await ai_fable.call("update_note", {"note_id": note["id"], "body": f"{body}\n{framed}"}, alice)
    fake.plain_replies.append(Reply(f"{body}\n{framed}".replace("- ", "* ")))  # the same words: nothing to say
    kept = await ai_fable.call("assist_note", {"note_id": note["id"], "instruction": "use stars"}, alice)
    assert "dropped" not in kept and kept["content"].endswith(framed), "the note's own lines stay"


async def test_a_section_draft_replaces_only_that_section(ai_fable: Fable, fake: FakeLLM, alice: Caller) -> None:
    note = await ai_fable.call("create_note", {"title": "Trip", "body": BODY}, alice)
    fake.plain_replies.append(Reply("- socks\n- charger"))
    draft = await ai_fable.call("assist_note", {"note_id": note["id"], "instruction": "checklist",
                                                "section": "Packing"}, alice)
    assert draft["original"].strip() == "socks, socks, more socks"
    await ai_fable.call("accept_note_draft", {"note_id": note["id"]}, alice)
    body = (await ai_fable.call("read_note", {"note_id": note["id"]}, alice))["body"]
    assert "- socks\n- charger" in body and "## Budget\n\n300 euro" in body and "more socks" not in body


async def test_a_stale_draft_is_a_conflict_and_reject_drops_it(ai_fable: Fable, fake: FakeLLM, alice: Caller) -> None:
    note = await ai_fable.call("create_note", {"title": "Trip", "body": BODY}, alice)
    fake.plain_replies.append(Reply("new text"))
    await ai_fable.call("assist_note", {"note_id": note["id"], "instruction": "rewrite"}, alice)
    await ai_fable.call("edit_note", {"note_id": note["id"], "operation": "append", "text": "edited meanwhile"}, alice)
    with pytest.raises(Conflict, match="changed since the draft"):
        await ai_fable.call("accept_note_draft", {"note_id": note["id"]}, alice)
    assert "edited meanwhile" in (await ai_fable.call("read_note", {"note_id": note["id"]}, alice))["body"]
    await ai_fable.call("reject_note_draft", {"note_id": note["id"]}, alice)
    async with ai_fable.db.transaction() as s:
        assert list((await s.execute(select(NoteDraft))).scalars()) == []


async def test_drafts_are_private_and_bad_sections_refused(
    ai_fable: Fable, fake: FakeLLM, alice: Caller, bob: Caller
) -> None:
    note = await ai_fable.call("create_note", {"title": "Trip", "body": BODY}, alice)
    with pytest.raises(NotFound):
        await ai_fable.call("assist_note", {"note_id": note["id"], "instruction": "x"}, bob)
    with pytest.raises(InvalidInput, match="no section 'Nope'"):
        await ai_fable.call("assist_note", {"note_id": note["id"], "instruction": "x", "section": "Nope"}, alice)
    fake.plain_replies.append(Reply("mine"))
    await ai_fable.call("assist_note", {"note_id": note["id"], "instruction": "x"}, alice)
    with pytest.raises(NotFound):
        await ai_fable.call("accept_note_draft", {"note_id": note["id"]}, bob)


async def test_tag_suggestions_prefer_existing_tags_and_skip_the_notes_own(
    ai_fable: Fable, fake: FakeLLM, alice: Caller
) -> None:
    await ai_fable.call("create_note", {"title": "Other", "tags": ["travel", "work/acme"]}, alice)
    note = await ai_fable.call("create_note", {"title": "Berlin", "body": "trip", "tags": ["travel"]}, alice)
    fake.plain_replies.append(Reply("Travel, city trips, #Germany, not a tag!, work/acme"))
    result = await ai_fable.call("suggest_tags", {"note_id": note["id"]}, alice)
    assert result == {"tags": ["city-trips", "germany", "work/acme"], "reason": ""}
    assert "Existing tags: travel, work/acme" in fake.chat_bodies()[-1]["messages"][-1]["content"]
    with pytest.raises(InvalidInput):
        await ai_fable.call("suggest_tags", {}, alice)


async def test_the_existing_tags_list_read_back_is_no_suggestion(ai_fable: Fable, fake: FakeLLM, alice: Caller) -> None:
    """SmolLM2 answered a lentil soup recipe with the start of the list it was shown, in order."""
    for title, tags in (("A", ["home", "travel", "car"]), ("B", ["home", "travel", "car"]), ("C", ["home", "travel"]),
                        ("D", ["home", "soup"])):  # listed as home (4), travel (3), car (2), soup (1)
        await ai_fable.call("create_note", {"title": title, "tags": tags}, alice)
    soup = "Lentil soup: red lentils, onion, cumin; simmer 20 minutes at home"
    fake.plain_replies.append(Reply("home, travel, car"))
    assert await ai_fable.call("suggest_tags", {"text": soup}, alice) == {
        "tags": ["home"], "reason": ""}, "what the note says is kept: it has the word home"
    fake.plain_replies.append(Reply("home, travel"))
    result = await ai_fable.call("suggest_tags", {"text": "Lentil soup with cumin"}, alice)
    assert result["tags"] == [] and "'home' (the list of existing tags read back)" in result["reason"]
    fake.plain_replies.append(Reply("soup, home"))  # not the list's order: a real answer
    assert (await ai_fable.call("suggest_tags", {"text": "Lentil soup with cumin"}, alice))["tags"] == ["soup", "home"]


async def test_tag_suggestions_drop_phrases_and_say_why_when_none_is_left(
    ai_fable: Fable, fake: FakeLLM, alice: Caller
) -> None:
    fake.plain_replies.append(Reply("Tags: work, the user wants"))
    assert await ai_fable.call("suggest_tags", {"text": "quarterly report"}, alice) == {"tags": ["work"], "reason": ""}
    fake.plain_replies.append(Reply("Here are the tags: the user wants a report, none, "
                                    "comma-separated lower case tags"))
    result = await ai_fable.call("suggest_tags", {"text": "quarterly report"}, alice)
    assert result == {"tags": [], "reason": "the model suggested no usable tags: 'the user wants a report' (too long); "
                                            "'none' (the instruction read back); 'comma-separated lower case tags' "
                                            "(too long)"}
    note = await ai_fable.call("create_note", {"title": "Report", "tags": ["work"]}, alice)
    fake.plain_replies.append(Reply("Work, #work"))
    assert await ai_fable.call("suggest_tags", {"note_id": note["id"]}, alice) == {
        "tags": [], "reason": "the note already has every tag the model suggested"}
    fake.plain_replies.append(Reply(", ".join(f"tag{i}" for i in range(12))))
    assert (await ai_fable.call("suggest_tags", {"text": "x", "limit": 3}, alice))["tags"] == ["tag0", "tag1", "tag2"]


def coming(weekday: int) -> str:
    """The coming ``weekday`` (0 Monday) after today, UTC (alice's zone), as the parser reads "friday"."""
    today = datetime.now(UTC).date()
    return (today + timedelta(days=(weekday - today.weekday()) % 7 or 7)).isoformat()


async def test_quick_capture_fills_in_a_task(ai_fable: Fable, fake: FakeLLM, alice: Caller) -> None:
    """The model's date (a wrong one here: a small model's "on Friday" became today) is never
    used: Fable's parser reads the date, and the model is shown the sentence without it, with the
    weekday and the coming dates in its prompt."""
    fake.plain_replies.append(Reply('Sure! {"kind": "task", "title": "Call the bank", "body": "", '
                                    '"due_date": "2026-12-04", "priority": "high", "tags": ["Money"]}'))
    task = await ai_fable.call("quick_capture", {"text": "call the bank friday, urgent"}, alice)
    assert (task["title"], task["kind"], task["due_date"], task["priority"], task["tags"]) == (
        "Call the bank", "task", coming(4), "high", ["money"])
    [body] = fake.chat_bodies()
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    assert user == "call the bank, urgent"
    friday = date.fromisoformat(coming(4))
    assert "(UTC); coming: " in system and f"Fri {friday.day}" in system


async def test_quick_capture_survives_a_confused_model(ai_fable: Fable, fake: FakeLLM, alice: Caller) -> None:
    fake.plain_replies.append(Reply('{"kind": "task", "title": "Water plants", "due_date": "next tuesday"}'))
    task = await ai_fable.call("quick_capture", {"text": "water the plants next tuesday"}, alice)
    assert (task["title"], task["kind"], task["due_date"]) == ("Water plants", "task", coming(1))


async def test_quick_capture_reads_the_15th_and_keeps_it_out_of_the_title(
    ai_fable: Fable, fake: FakeLLM, alice: Caller
) -> None:
    fake.plain_replies.append(Reply('{"kind": "note", "title": "Pay window cleaner £20", "due_date": null}'))
    task = await ai_fable.call("quick_capture", {"text": "pay window cleaner £20 on the 15th"}, alice)
    today = datetime.now(UTC).date()
    due = today.replace(day=15) if today.day <= 15 else (today.replace(day=1) + timedelta(days=32)).replace(day=15)
    assert (task["title"], task["kind"], task["due_date"]) == ("Pay window cleaner £20", "task", due.isoformat())
    assert fake.chat_bodies()[0]["messages"][1]["content"] == "pay window cleaner £20"


async def test_quick_capture_cuts_the_models_title_or_falls_back_to_the_users_words(
    ai_fable: Fable, fake: FakeLLM, alice: Caller
) -> None:
    long = ("The user wants to remember to call the bank on friday about the mortgage renewal and the "
            "new savings account they opened recently")
    assert len(long) == 129
    fake.plain_replies.append(Reply(f'{{"kind": "task", "title": "Title: {long}", "priority": "high"}}'))
    task = await ai_fable.call("quick_capture", {"text": "call the bank friday, urgent"}, alice)
    assert (task["title"], task["priority"]) == ("The user wants to remember to call the", "high")
    fake.plain_replies.append(Reply('{"kind": "note", "title": "\\"\\"", "body": ""}'))
    text = "ideas for the garden: a pond, raspberries along the fence and a bench under the old pear tree"
    note = await ai_fable.call("quick_capture", {"text": text}, alice)
    assert note["title"] == "ideas for the garden: a pond, raspberries along"
    assert (await ai_fable.call("read_note", {"note_id": note["id"]}, alice))["body"] == text, "nothing lost"


@pytest.mark.parametrize("answer", ["2026-12-10", "I am not sure what you mean.", "", '{"due_date": "2026-12-10"}'])
async def test_an_unreadable_capture_saves_nothing_and_offers_a_plain_note(
    ai_fable: Fable, fake: FakeLLM, alice: Caller, answer: str
) -> None:
    fake.plain_replies.append(Reply(answer))
    text = "Dentist on the 10th. Bring the insurance card."
    with pytest.raises(NeedsConfirmation, match=r"^the model's answer could not be read as a note or task") as caught:
        await ai_fable.call("quick_capture", {"text": text}, alice)
    assert "plain=true" in caught.value.message
    assert caught.value.details == {
        "requires_confirmation": True, "answer": answer,
        "fallback": {"title": "Dentist on the 10th.", "body": "Bring the insurance card."},
        "confirm_arguments": {"text": text, "plain": True}}
    assert (await ai_fable.call("list_notes", {}, alice))["items"] == []
    asked = len(fake.chat_bodies())
    saved = await ai_fable.call("quick_capture", caught.value.details["confirm_arguments"], alice)
    assert (saved["title"], saved["kind"]) == ("Dentist on the 10th.", "note")
    assert (await ai_fable.call("read_note", {"note_id": saved["id"]}, alice))["body"] == "Bring the insurance card."
    assert len(fake.chat_bodies()) == asked, "a plain note asks no model"


async def test_a_plain_capture_keeps_a_long_first_sentence_whole_in_the_body(ai_fable: Fable, alice: Caller) -> None:
    text = "word " * 40 + "end"
    note = await ai_fable.call("quick_capture", {"text": text, "plain": True}, alice)
    assert note["title"] == ("word " * 24).strip() + "…" and len(note["title"]) == 120
    assert (await ai_fable.call("read_note", {"note_id": note["id"]}, alice))["body"] == text


async def test_an_unreadable_capture_is_the_same_answer_over_rest_mcp_and_the_assistant(
    ai_fable: Fable, fake: FakeLLM, alice: Caller
) -> None:
    """REST: 409 needs_confirmation with the fallback; MCP: an error result saying so; the
    assistant's tool loop: requires_confirmation with the arguments that save the plain note."""
    from dataclasses import replace

    import httpx
    from mcp import Client

    from fable_core.identity.accounts import create_api_key
    from fable_mcp.server import build_server
    from fable_web.app import create_app

    async with ai_fable.db.transaction() as s:
        _, key = await create_api_key(s, alice.user_id, "t")
    fake.plain_replies.append(Reply("2026-12-10"))
    transport = httpx.ASGITransport(create_app(ai_fable))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost",
                                 headers={"Authorization": f"Bearer {key}"}) as http:
        response = await http.post("/api/assist/capture", json={"text": "dentist on the 10th"})
        assert response.status_code == 409
        error = response.json()["error"]
        assert error["type"] == "needs_confirmation"
        assert error["message"].startswith("the model's answer could not be read as a note or task ('2026-12-10')")
        assert error["details"]["fallback"] == {"title": "dentist on the 10th", "body": ""}
        saved = await http.post("/api/assist/capture", json=error["details"]["confirm_arguments"])
        assert saved.status_code == 200 and saved.json()["title"] == "dentist on the 10th"

    fake.plain_replies.append(Reply("2026-12-10"))
    async with Client(build_server(ai_fable, replace(alice, surface="mcp"))) as client:
        result = await client.call_tool("quick_capture", {"text": "dentist on the 11th"})
    assert result.is_error and "could not be read as a note or task" in result.content[0].text

    from fable_core.assistant.toolloop import LoopResult, run_tool_loop

    fake.replies.extend([Reply("", [("quick_capture", {"text": "dentist on the 12th"})]),
                         Reply("I could not read it.")])
    fake.plain_replies.append(Reply("2026-12-10"))
    result_of = LoopResult()

    async def emit(event: str, data: dict) -> None:
        pass

    await run_tool_loop(ai_fable.llm, ai_fable.dispatcher, replace(alice, surface="assistant"),
                        [{"role": "user", "content": "note: dentist on the 12th"}], emit, result_of)
    [event] = result_of.tool_events
    assert event["requires_confirmation"] and not event["ok"]
    assert event["confirm_arguments"] == {"text": "dentist on the 12th", "plain": True}
    titles = [n["title"] for n in (await ai_fable.call("list_notes", {}, alice))["items"]]
    assert titles == ["dentist on the 10th"]


async def test_a_slow_model_holds_no_database_connection_and_each_user_gets_a_share(
    ai_fable: Fable, fake: FakeLLM, alice: Caller, bob: Caller
) -> None:
    """alice starts a dozen quick captures against a model that does not answer: none holds a
    pooled connection or a dispatcher slot while it waits, bob's reads run as usual, and alice
    may have only her share of the model (2 running, 8 waiting; the rest refused at once)."""
    import asyncio
    import threading

    from fable_core.errors import RateLimited

    release = threading.Event()
    fake.plain_replies.extend(Reply(f'{{"kind": "task", "title": "Call {i}"}}', hold=release) for i in range(12))
    captures = [asyncio.create_task(ai_fable.call("quick_capture", {"text": f"call {i}"}, alice))
                for i in range(12)]
    try:
        gate = ai_fable.model_gate
        assert gate is not None
        def settled() -> bool:  # the model has alice's two running requests, eight wait, two were refused
            refused = sum(c.done() for c in captures)  # (their lookup of today held a slot until they came)
            return len(fake.chat_bodies()) == 2 and gate.in_use(alice.user_id) == 10 and refused == 2
        for _ in range(round(scaled(10) / 0.01)):
            if settled():
                break
            await asyncio.sleep(0.01)
        assert settled()
        # Every call's database work takes one of these slots: none is held while the model thinks.
        assert ai_fable.dispatcher._slots._value == ai_fable.settings.fable_db_pool_size
        listed = await asyncio.wait_for(ai_fable.call("list_notes", {}, bob), scaled(5))
        assert listed["items"] == []
    finally:
        release.set()
        results = await asyncio.gather(*captures, return_exceptions=True)
    refused = [r for r in results if isinstance(r, BaseException)]
    assert len(refused) == 2 and all(isinstance(r, RateLimited) for r in refused)
    notes = await ai_fable.call("list_notes", {"limit": 50}, alice)
    assert len(notes["items"]) == 10


async def test_project_summaries_feed_project_search(ai_fable: Fable, fake: FakeLLM, alice: Caller) -> None:
    project = await ai_fable.call("create_project", {"title": "Casa", "description": "the house"}, alice)
    await ai_fable.call("create_note", {"title": "Roof", "body": "new tiles", "project_id": project["id"]}, alice)
    fake.plain_replies.append(Reply("Renovating the house: roof tiles and the garden."))
    summary = await ai_fable.call("summarize_project", {"project_id": project["id"]}, alice)
    assert summary["auto_summary"] == "Renovating the house: roof tiles and the garden." and summary["updated"]
    assert "Roof: new tiles" in fake.chat_bodies()[-1]["messages"][-1]["content"]
    found = await ai_fable.call("search_projects", {"query": "roof tiles"}, alice)
    assert [p["id"] for p in found["items"]] == [project["id"]]
    assert (await ai_fable.call("search_projects", {"query": "spaceship"}, alice))["items"] == []


@pytest.mark.parametrize(("answer", "reason"), [
    ("", "the model's answer was empty"),
    (" \n\n ", "the model's answer was empty"),
    ("Summarise this project in at most 80 words: what it is about", "the model's answer repeated the prompt"),
    ("Project: Casa\nDescription: the house\nGoal: None", "the model's answer repeated the prompt"),
    ('{"summary": "Renovating the house"}', "the model's answer was JSON, not words"),
    ("Renovating the house for under a million pounds by 2031.",
     "the model's answer has figures its sources do not: million, 2031"),
    ("Your response should contain exactly 6 sentences.", "the model's answer read out instructions"),
])
async def test_an_empty_or_echoed_summary_is_not_stored(
    ai_fable: Fable, fake: FakeLLM, alice: Caller, answer: str, reason: str
) -> None:
    project = await ai_fable.call("create_project", {"title": "Casa", "description": "the house"}, alice)
    fake.plain_replies.append(Reply("Renovating the house."))
    await ai_fable.call("summarize_project", {"project_id": project["id"]}, alice)
    async with ai_fable.db.transaction() as s:
        stamped = await s.scalar(select(Project.summary_updated_at))
    fake.plain_replies.append(Reply(answer))
    result = await ai_fable.call("summarize_project", {"project_id": project["id"]}, alice)
    assert result == {"project_id": project["id"], "auto_summary": "Renovating the house.", "updated": False,
                      "reason": f"{reason}; the summary was left as it was"}
    async with ai_fable.db.transaction() as s:
        assert (await s.execute(select(Project.auto_summary, Project.summary_updated_at))).one() == (
            "Renovating the house.", stamped)


async def test_note_changes_refresh_the_project_summary_once(ai_fable: Fable, fake: FakeLLM, alice: Caller) -> None:
    summaries = ai_fable.assistant.summaries
    summaries.delay = 0.0
    fake.plain_replies.append(Reply("Plain: a house with a roof, a garden and a kitchen."))
    try:
        project = await ai_fable.call("create_project", {"title": "Casa"}, alice)
        for title in ("Roof", "Garden", "Kitchen"):
            await ai_fable.call("create_note", {"title": title, "project_id": project["id"]}, alice)
        await summaries.idle()
    finally:
        summaries.delay = 30.0
    summaries_asked = [b for b in fake.chat_bodies() if "Summarise this project" in b["messages"][0]["content"]]
    assert len(summaries_asked) == 1
    async with ai_fable.db.transaction() as s:
        assert (await s.scalar(select(Project.auto_summary))).startswith("Plain: ")
    await ai_fable.call("create_note", {"title": "Attic", "project_id": project["id"]}, alice)
    await summaries.idle()
    assert len([b for b in fake.chat_bodies() if "Summarise this project" in b["messages"][0]["content"]]) == 1, \
        "debounced: summarised at most once an hour"


async def test_ai_features_without_a_model_say_so(fable: Fable, alice: Caller) -> None:
    note = await fable.call("create_note", {"title": "Trip", "body": BODY}, alice)
    for name, args in (("assist_note", {"note_id": note["id"], "instruction": "x"}),
                       ("suggest_tags", {"text": "hello"}), ("quick_capture", {"text": "hello"})):
        with pytest.raises(Unavailable, match=r"^no model available"):
            await fable.call(name, args, alice)
    async with fable.db.transaction() as s:
        assert len(list((await s.execute(select(Note))).scalars())) == 1


async def test_a_streamed_rewrite_reaches_an_mcp_client_as_progress(
    ai_fable: Fable, fake: FakeLLM, alice: Caller
) -> None:
    """A streaming tool over MCP: with a progress token, each token is a progress notification
    (its text the message), then the result; without one, just the result."""
    from dataclasses import replace

    from mcp import Client

    from fable_mcp.server import build_server

    note = await ai_fable.call("create_note", {"title": "Trip", "body": BODY}, alice)
    fake.plain_replies.extend([Reply("# Plan\n\nMonday.\n"), Reply("# Plan\n\nMonday.\n")])
    heard: list[tuple[float, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        heard.append((value, message))

    async with Client(build_server(ai_fable, replace(alice, surface="mcp"))) as client:
        result = await client.call_tool("assist_note", {"note_id": note["id"], "instruction": "shorter"},
                                        progress_callback=progress)
        quiet = await client.call_tool("assist_note", {"note_id": note["id"], "instruction": "shorter"})
    assert not result.is_error and data(result)["content"] == "# Plan\n\nMonday."
    assert [v for v, _ in heard] == list(range(1, len(heard) + 1)) and len(heard) >= 3
    assert "".join(m or "" for _, m in heard) == "# Plan\n\nMonday.\n"
    assert not quiet.is_error and len(heard) == len(Reply("# Plan\n\nMonday.\n").pieces())
